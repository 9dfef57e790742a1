// charge_on_status: a route's charges taken with the request and given back
// when the origin's status does not match (failed logins cost, successes do
// not), so a caller with no room is refused before the call and concurrent
// calls never pass the limit.
import { describe, expect, it } from "vitest";
import { clockedGateway, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";

const CONFIG = {
  categories: { login_failure: { limits: { ip: [{ count: 3, window_s: 900 }] } } },
  routes: [{ method: "POST", path: "/login", charges: { login_failure: 1 }, charge_on_status: ["4xx", 500] }],
};

function login(ip: string, tag: string, status: number): Request {
  return gatewayRequest("/login", { method: "POST", ip, body: "user=a", headers: { "x-origin-status": String(status), "x-test-tag": tag } });
}

describe("charge_on_status", () => {
  it("never charges a success, charges each failure exactly once, and refuses the fourth failure before the call", async () => {
    const gateway = clockedGateway(CONFIG);
    const ip = uniqueIp();
    const tag = unique("login");
    for (let i = 0; i < 10; i++) expect((await gateway.call(login(ip, tag, 200), { settle: true })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await gateway.call(login(ip, tag, 401), { settle: true })).status).toBe(401);
    const refused = await gateway.call(login(ip, tag, 401), { settle: true });
    expect(refused.status).toBe(429);
    const body = await problemOf(refused);
    expect(body).toMatchObject({ code: "rate_limited", category: "login_failure", "violated-policies": ["login_failure-ip-900s"] });
    // Exactly three units charged at one instant: a fourth fits after one is earned back, 300 s.
    expect(body.retry_after_ms).toBe(300_000);
    // The origin saw the ten successes and three failures, not the refused call.
    expect(await originLog(tag)).toHaveLength(13);
    // A success is refused too while there is no room: the gateway cannot know the status before the call.
    expect((await gateway.call(login(ip, tag, 200))).status).toBe(429);
    gateway.clock.nowMs += 300_000;
    expect((await gateway.call(login(ip, tag, 200), { settle: true })).status).toBe(200);
  });

  it("charges a failure whose client hung up before the origin answered", async () => {
    const gateway = clockedGateway(CONFIG);
    const ip = uniqueIp();
    const tag = unique("left");
    for (let i = 0; i < 3; i++) {
      const controller = new AbortController();
      const request = gatewayRequest("/login", { method: "POST", ip, body: "user=a", signal: controller.signal, headers: { "x-origin-status": "401", "x-origin-delay-ms": "50", "x-test-tag": tag } });
      const pending = gateway.call(request, { settle: true });
      controller.abort();
      await pending.catch(() => undefined);
    }
    expect(await originLog(tag)).toHaveLength(3);
    const refused = await gateway.call(login(ip, tag, 401));
    expect(refused.status).toBe(429);
    expect((await problemOf(refused)).retry_after_ms).toBe(300_000);
  });

  it("lets 60 concurrent failed logins against 2 per 900 s reach the origin at most twice", async () => {
    const gateway = clockedGateway({
      categories: { login_failure: { limits: { ip: [{ count: 2, window_s: 900 }] } } },
      routes: [{ method: "POST", path: "/login", charges: { login_failure: 1 }, charge_on_status: ["4xx"] }],
    });
    const ip = uniqueIp();
    const tag = unique("burst");
    const slow = () => gatewayRequest("/login", { method: "POST", ip, body: "user=a", headers: { "x-origin-status": "401", "x-origin-delay-ms": "100", "x-test-tag": tag } });
    // All sixty arrive before any has answered: the charge is taken before forwarding, so only two find room.
    const answers = await Promise.all(Array.from({ length: 60 }, () => gateway.call(slow(), { settle: true })));
    expect(answers.filter((a) => a.status === 401)).toHaveLength(2);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(58);
    expect(await originLog(tag)).toHaveLength(2);
    // Two units charged at one instant: the next fits once one is earned back, 450 s.
    const refused = await gateway.call(login(ip, tag, 401));
    expect((await problemOf(refused)).retry_after_ms).toBe(450_000);
  });

  it("gives the charge of a call that succeeds back exactly, so successes in flight never refuse a failure", async () => {
    const gateway = clockedGateway(CONFIG);
    const ip = uniqueIp();
    const tag = unique("giveback");
    // Three slow successes hold the three units while in flight; once they answer 200, the units are back.
    const slowOk = () => gatewayRequest("/login", { method: "POST", ip, body: "user=a", headers: { "x-origin-status": "200", "x-origin-delay-ms": "50", "x-test-tag": tag } });
    const oks = await Promise.all(Array.from({ length: 3 }, () => gateway.call(slowOk(), { settle: true })));
    expect(oks.map((a) => a.status)).toEqual([200, 200, 200]);
    // Nothing is left charged: three failures fit, and the fourth is refused with the delay of exactly three units.
    for (let i = 0; i < 3; i++) expect((await gateway.call(login(ip, tag, 401), { settle: true })).status).toBe(401);
    const refused = await gateway.call(login(ip, tag, 401));
    expect(refused.status).toBe(429);
    expect((await problemOf(refused)).retry_after_ms).toBe(300_000);
  });

  it("charges a status named by code as well as by class, and a 3xx not at all", async () => {
    const gateway = clockedGateway(CONFIG);
    const ip = uniqueIp();
    const tag = unique("codes");
    for (let i = 0; i < 5; i++) expect((await gateway.call(login(ip, tag, 302), { settle: true })).status).toBe(302);
    expect((await gateway.call(login(ip, tag, 500), { settle: true })).status).toBe(500);
    expect((await gateway.call(login(ip, tag, 503), { settle: true })).status).toBe(503);
    expect((await gateway.call(login(ip, tag, 403), { settle: true })).status).toBe(403);
    expect((await gateway.call(login(ip, tag, 403), { settle: true })).status).toBe(403);
    expect((await gateway.call(login(ip, tag, 200))).status).toBe(429);
  });

  it("lists the deferred policy in RateLimit-Policy, and shows its state once a failure is charged", async () => {
    const gateway = clockedGateway(CONFIG);
    const ip = uniqueIp();
    const tag = unique("headers");
    const ok = await gateway.call(login(ip, tag, 200), { settle: true });
    expect(ok.headers.get("ratelimit-policy")).toContain('"login_failure-ip-900s";q=3;w=900');
    const failed = await gateway.call(login(ip, tag, 401), { settle: true });
    expect(failed.headers.get("ratelimit")).toBe('"login_failure-ip-900s";r=2;t=300');
  });
});

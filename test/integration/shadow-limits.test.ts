// Per-policy shadow through the Worker, on clocks the tests hold: a shadow
// limit beside live ones refuses nothing and changes nothing they decide,
// marks what it would refuse (Tollgate-Shadow), is counted per caller
// (GET /traffic/shadow), is not advertised, and switched on enforces from
// the state it kept. Shadow overrides and shadow blocks the same way, and
// the validation of `shadow` and `penalty` on a limit.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { trafficFlushOptionsFor } from "../../src/limits/traffic";
import { clockedGateway, gatewayRequest, problemOf, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const CONFIG = testConfig({ cache_ttl_s: 1 });
const LIVE = { count: 100, window_s: 60 };
const TRIED = { count: 2, window_s: 60, shadow: true };

function keyed(key: string, tag = "shadow"): Request {
  return gatewayRequest("/things", { ip: "198.51.100.61", headers: { authorization: `Bearer ${key}`, "x-test-tag": tag } });
}

async function flushTraffic(gateway: ReturnType<typeof clockedGateway>): Promise<void> {
  await gateway.runtime.traffic.flushNow(database(env.DB), gateway.clock.nowMs, trafficFlushOptionsFor(gateway.runtime, env as never, 86_400_000));
}

interface ShadowAnswer {
  policies: { policy: string; would_refuse: number; decisions: Record<string, number>; tenants: Record<string, number>; callers: { caller: string; would_refuse: number; explain: string }[] }[];
}

describe("a shadow limit beside a live one", () => {
  it("refuses nothing, marks the 3rd request onwards, counts them per caller, and switched on refuses the next one at once", async () => {
    const tenant = unique("shadow");
    await createTenant(CONFIG, tenant, { limits: { request: { key: [LIVE, TRIED] } } });
    const a = await mintKey(CONFIG, tenant);
    const b = await mintKey(CONFIG, tenant);
    const c = await mintKey(CONFIG, tenant);
    const gateway = clockedGateway(CONFIG);

    const answers: Response[] = [];
    for (let i = 0; i < 5; i++) answers.push(await gateway.call(keyed(a.key), { settle: true }));
    for (let i = 0; i < 3; i++) answers.push(await gateway.call(keyed(b.key), { settle: true }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 200]);
    const marks = answers.map((r) => r.headers.get("tollgate-shadow"));
    const mark = 'rate_limited;policy="request-key-60s"';
    expect(marks).toEqual([null, null, mark, mark, mark, null, null, mark]);
    // Not advertised: the client is told only of the live limit.
    for (const r of answers) {
      expect(r.headers.get("ratelimit-policy")).toBe('"request-key-60s";q=100;w=60, "request-tenant-1s";q=2000;w=1;tollgate-burst=4000');
    }

    await flushTraffic(gateway);
    const shadow = await jsonOf<ShadowAnswer>(await adminCall("GET", "/traffic/shadow?minutes=60", CONFIG), 200);
    const policy = shadow.policies.find((p) => p.policy === "request-key-60s");
    expect(policy?.tenants[tenant]).toBe(4);
    const callers = Object.fromEntries((policy?.callers ?? []).map((x) => [x.caller, x.would_refuse]));
    expect(callers[`key:${a.id}`]).toBe(3);
    expect(callers[`key:${b.id}`]).toBe(1);
    expect(callers[`key:${c.id}`]).toBeUndefined();

    // Switched on: the state it kept (two spends each of a and b) refuses at once.
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/limits`, CONFIG, { body: { limits: { request: { key: [LIVE, { count: 2, window_s: 60 }] } } } }), 200);
    gateway.clock.nowMs += 1_500;
    const refusedA = await gateway.call(keyed(a.key), { settle: true });
    expect(refusedA.status).toBe(429);
    expect(refusedA.headers.get("tollgate-shadow")).toBeNull();
    // Two spends at t0 put TAT at t0 + 60 s; a third fits once TAT − t + 30 s ≤ 60 s: 30 s after t0, 28.5 s from now.
    expect((await problemOf(refusedA)).retry_after_ms).toBe(28_500);
    expect((await gateway.call(keyed(b.key), { settle: true })).status).toBe(429);
    expect((await gateway.call(keyed(c.key), { settle: true })).status).toBe(200);
  });

  it("never changes what the enforced limits decide or charge", async () => {
    const tried = unique("shadow-t");
    const plain = unique("shadow-p");
    await createTenant(CONFIG, tried, { limits: { request: { key: [{ count: 3, window_s: 60 }, { count: 1, window_s: 60, shadow: true }] } } });
    await createTenant(CONFIG, plain, { limits: { request: { key: [{ count: 3, window_s: 60 }] } } });
    const withShadow = await mintKey(CONFIG, tried);
    const without = await mintKey(CONFIG, plain);
    const gateway = clockedGateway(CONFIG);
    const run = async (key: string) => {
      const out: { status: number; retry: unknown; remaining: string | null }[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await gateway.call(keyed(key), { settle: true });
        out.push({ status: r.status, retry: r.status === 429 ? (await problemOf(r)).retry_after_ms : null, remaining: r.headers.get("x-ratelimit-remaining") });
        gateway.clock.nowMs += 1_000;
      }
      return out;
    };
    const start = gateway.clock.nowMs;
    const shadowed = await run(withShadow.key);
    gateway.clock.nowMs = start;
    const alone = await run(without.key);
    expect(shadowed).toEqual(alone);
    expect(alone.map((a) => a.status)).toEqual([200, 200, 200, 429, 429]);
  });

  it("is decided on its own: two shadow limits each report what they alone would refuse", async () => {
    const tenant = unique("shadow-2");
    await createTenant(CONFIG, tenant, { limits: { request: { key: [LIVE, { count: 1, window_s: 60, shadow: true }, { count: 3, window_s: 3600, shadow: true }] } } });
    const minted = await mintKey(CONFIG, tenant);
    const gateway = clockedGateway(CONFIG);
    const marks: (string | null)[] = [];
    for (let i = 0; i < 4; i++) marks.push((await gateway.call(keyed(minted.key), { settle: true })).headers.get("tollgate-shadow"));
    // The hourly one is charged by every request the per-minute one would refuse (it alone would admit them), so it refuses the 4th.
    expect(marks).toEqual([null, 'rate_limited;policy="request-key-60s"', 'rate_limited;policy="request-key-60s"', 'rate_limited;policy="request-key-60s", rate_limited;policy="request-key-3600s"']);
  });
});

describe("shadow overrides and blocks", () => {
  it("tries an override beside the limits in force, which stay enforced", async () => {
    const tenant = unique("shadow-o");
    await createTenant(CONFIG, tenant, { limits: { request: { key: [{ count: 2, window_s: 60 }] } } });
    const minted = await mintKey(CONFIG, tenant);
    const put = await jsonOf<{ shadow: boolean; limits: Record<string, unknown[]> }>(
      await adminCall("PUT", `/overrides/key:${minted.id}`, CONFIG, { body: { limits: { request: [{ count: 1, window_s: 60 }] }, shadow: true } }),
      201,
    );
    expect(put.shadow).toBe(true);
    expect(put.limits.request).toEqual([{ count: 1, window_s: 60, shadow: true }]);
    const gateway = clockedGateway(CONFIG);
    const first = await gateway.call(keyed(minted.key), { settle: true });
    const second = await gateway.call(keyed(minted.key), { settle: true });
    const third = await gateway.call(keyed(minted.key), { settle: true });
    expect([first.status, second.status, third.status]).toEqual([200, 200, 429]);
    expect(second.headers.get("tollgate-shadow")).toBe('rate_limited;policy="request-key-60s"');

    const explained = await jsonOf<{ limits: { source: string; shadow?: boolean; limit: { count: number } }[] }>(await adminCall("GET", `/callers/key:${minted.id}`, CONFIG), 200);
    const request = explained.limits.filter((l) => (l as unknown as { category: string }).category === "request" && (l as unknown as { subject: string }).subject === "key");
    expect(request.map((l) => ({ source: l.source, shadow: l.shadow ?? false, count: l.limit.count }))).toEqual([
      { source: "tenant", shadow: false, count: 2 },
      { source: "override", shadow: true, count: 1 },
    ]);
  });

  it("forwards what a shadow block would refuse, marked with the block", async () => {
    const ip = uniqueIp();
    const block = await jsonOf<{ id: number; shadow: boolean }>(await adminCall("POST", "/blocks", CONFIG, { body: { target: `ip:${ip}`, shadow: true } }), 201);
    expect(block.shadow).toBe(true);
    const gateway = clockedGateway(CONFIG);
    const r = await gateway.call(gatewayRequest("/things", { ip }), { settle: true });
    expect(r.status).toBe(200);
    expect(r.headers.get("tollgate-shadow")).toBe(`blocked;policy="block-${block.id}"`);
    // Switched on: the same target, blocked.
    await jsonOf(await adminCall("POST", "/blocks", CONFIG, { body: { target: `ip:${ip}`, shadow: false } }), 200);
    gateway.clock.nowMs += 1_500;
    expect((await gateway.call(gatewayRequest("/things", { ip }), { settle: true })).status).toBe(403);
  });
});

describe("validation", () => {
  const put = (limits: unknown) => adminCall("PUT", `/tenants/${unique("shadow-v")}`, CONFIG, { body: { limits: { request: { key: limits } } } });

  it.each([
    [[{ count: 1, window_s: 60, shadow: "yes" }], "limits.request.key.0.shadow"],
    [[{ count: 1, window_s: 60, shadow: true, scope: "global" }], "limits.request.key.0.shadow"],
    [[{ count: 1, window_s: 60, penalty: { after: 0, within_s: 60, block_s: 60 } }], "limits.request.key.0.penalty.after"],
    [[{ count: 1, window_s: 60, penalty: { after: 3, within_s: 0, block_s: 60 } }], "limits.request.key.0.penalty.within_s"],
    [[{ count: 1, window_s: 60, penalty: { after: 3, within_s: 60, block_s: 0.5 } }], "limits.request.key.0.penalty.block_s"],
    [[{ count: 1, window_s: 60, penalty: { after: 3, within_s: 60, block_s: 60, forever: true } }], "limits.request.key.0.penalty.forever"],
    [[{ count: 1, window_s: 60, penalty: { after: 3, within_s: 60, block_s: 604_801 } }], "limits.request.key.0.penalty.block_s"],
    [[1, 2, 3, 4].map((n) => ({ count: n, window_s: 60 })), "limits.request.key"],
    [[1, 2, 3, 4].map((n) => ({ count: n, window_s: 60, shadow: true })), "limits.request.key"],
  ])("refuses %j naming %s", async (limits, field) => {
    const problem = await problemOf(await put(limits));
    expect(problem.code).toBe("invalid_request");
    expect(problem.field).toBe(field);
  });

  it("accepts three live limits and three shadow ones beside them", async () => {
    const limits = [1, 2, 3].flatMap((n) => [
      { count: n, window_s: 60 },
      { count: n, window_s: 3600, shadow: true, penalty: { after: 5, within_s: 60, block_s: 300 } },
    ]);
    const res = await put(limits);
    expect(res.status).toBe(201);
  });
});

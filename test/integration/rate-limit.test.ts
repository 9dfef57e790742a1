import { afterEach, describe, expect, it, vi } from "vitest";
import { callGateway, clockedGateway, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";

function limited(count: number, windowS: number, extra: Record<string, unknown> = {}) {
  return { TOLLGATE: { categories: { request: { limits: { ip: [{ count, window_s: windowS }] } } }, ...extra } };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("rate limits for anonymous callers, by address", () => {
  it("admits exactly the burst, then answers 429 rate_limited with Retry-After and retry_after_ms", async () => {
    const gateway = clockedGateway(limited(5, 60).TOLLGATE);
    const ip = uniqueIp();
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await gateway.call(gatewayRequest("/burst", { ip }))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    gateway.clock.nowMs += 1;
    const denied = await gateway.call(gatewayRequest("/burst", { ip }));
    expect(denied.status).toBe(429);
    const body = await problemOf(denied);
    expect(body).toMatchObject({ code: "rate_limited", status: 429, category: "request", type: "https://tollgate.dev/problems/rate_limited" });
    // One request is earned back every 12 s, and 1 ms has passed since the first: 11,999 ms.
    expect(body.retry_after_ms).toBe(11_999);
    expect(denied.headers.get("retry-after")).toBe("12");
    // Nothing in the answer names the caller.
    expect(JSON.stringify(body)).not.toContain(ip);
    for (const [, value] of denied.headers) expect(value).not.toContain(ip);
  });

  it("keeps callers at different addresses apart", async () => {
    const env = limited(1, 60);
    const a = uniqueIp();
    const b = uniqueIp();
    expect((await callGateway(gatewayRequest("/apart", { ip: a }), env)).status).toBe(200);
    expect((await callGateway(gatewayRequest("/apart", { ip: a }), env)).status).toBe(429);
    expect((await callGateway(gatewayRequest("/apart", { ip: b }), env)).status).toBe(200);
  });

  it("admits again after the delay it gave, and not before (Retry-After is sufficient and tight)", async () => {
    // 2 per 600 ms: one request earned back every 300 ms.
    const gateway = clockedGateway(limited(2, 0.6).TOLLGATE);
    const ip = uniqueIp();
    expect((await gateway.call(gatewayRequest("/tight", { ip }))).status).toBe(200);
    gateway.clock.nowMs += 40;
    expect((await gateway.call(gatewayRequest("/tight", { ip }))).status).toBe(200);
    gateway.clock.nowMs += 70;
    const denied = await gateway.call(gatewayRequest("/tight", { ip }));
    expect(denied.status).toBe(429);
    // The first spend is earned back 300 ms after it, 190 ms from now.
    const retryMs = (await problemOf(denied)).retry_after_ms as number;
    expect(retryMs).toBe(190);
    // 1 ms before the delay: still denied, with 1 ms to go (the denial charged nothing).
    gateway.clock.nowMs += retryMs - 1;
    const early = await gateway.call(gatewayRequest("/tight", { ip }));
    expect(early.status).toBe(429);
    expect((await problemOf(early)).retry_after_ms).toBe(1);
    gateway.clock.nowMs += 1;
    expect((await gateway.call(gatewayRequest("/tight", { ip }))).status).toBe(200);
  });

  it("puts RateLimit and X-RateLimit headers on admitted and refused responses", async () => {
    const env = limited(3, 60);
    const ip = uniqueIp();
    const first = await callGateway(gatewayRequest("/headers", { ip }), env);
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe('"request-ip-60s";q=3;w=60');
    expect(first.headers.get("ratelimit")).toBe('"request-ip-60s";r=2;t=20');
    expect(first.headers.get("x-ratelimit-limit")).toBe("3");
    expect(first.headers.get("x-ratelimit-remaining")).toBe("2");
    expect(first.headers.get("x-ratelimit-reset")).toBe("20");
    await callGateway(gatewayRequest("/headers", { ip }), env);
    await callGateway(gatewayRequest("/headers", { ip }), env);
    const denied = await callGateway(gatewayRequest("/headers", { ip }), env);
    expect(denied.status).toBe(429);
    expect(denied.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(denied.headers.get("ratelimit")).toMatch(/^"request-ip-60s";r=0;t=(59|60)$/);
  });

  it("never charges exempt paths and gives them no limit headers", async () => {
    const env = limited(1, 60);
    const ip = uniqueIp();
    for (let i = 0; i < 5; i++) {
      const res = await callGateway(gatewayRequest("/healthz", { ip }), env);
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit")).toBeNull();
      expect(res.headers.get("x-ratelimit-remaining")).toBeNull();
    }
    expect((await callGateway(gatewayRequest("/charged", { ip }), env)).status).toBe(200);
  });

  it("charges route categories on top of request, all or nothing", async () => {
    const env = {
      TOLLGATE: {
        categories: { request: { limits: { ip: [{ count: 100, window_s: 60 }] } }, search: { limits: { ip: [{ count: 2, window_s: 60 }] } } },
        routes: [{ method: "GET", path: "/search/*", charges: { search: 1 } }],
      },
    };
    const ip = uniqueIp();
    expect((await callGateway(gatewayRequest("/search/a", { ip }), env)).status).toBe(200);
    expect((await callGateway(gatewayRequest("/search/b", { ip }), env)).status).toBe(200);
    const denied = await callGateway(gatewayRequest("/search/c", { ip }), env);
    expect(denied.status).toBe(429);
    expect((await problemOf(denied)).category).toBe("search");
    // The denied search charged no request unit: 97 of 100 remain after this one.
    const other = await callGateway(gatewayRequest("/other", { ip }), env);
    expect(other.headers.get("x-ratelimit-remaining")).toBe("97");
  });

  it("shares one anonymous aggregate bucket across addresses when configured", async () => {
    const env = { TOLLGATE: { categories: { request: { limits: { anonymous: [{ count: 2, window_s: 60 }] } } }, exempt_paths: ["/agg-probe"] } };
    expect((await callGateway(gatewayRequest("/agg", { ip: uniqueIp() }), env)).status).toBe(200);
    expect((await callGateway(gatewayRequest("/agg", { ip: uniqueIp() }), env)).status).toBe(200);
    expect((await callGateway(gatewayRequest("/agg", { ip: uniqueIp() }), env)).status).toBe(429);
  });

  it("forwards in shadow mode, marks and logs what it would have refused, and charges nothing for it", async () => {
    const config = limited(1, 60, { mode: "shadow", request_log: true }).TOLLGATE;
    const gateway = clockedGateway(config);
    const ip = uniqueIp();
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void lines.push(String(line)));
    const first = await gateway.call(gatewayRequest("/shadow", { ip }), { settle: true });
    expect(first.headers.get("tollgate-shadow")).toBeNull();
    const tag = unique("shadow");
    for (let i = 0; i < 3; i++) {
      const over = await gateway.call(gatewayRequest("/shadow", { ip, headers: { "x-test-tag": tag } }), { settle: true });
      expect(over.status).toBe(200);
      expect(over.headers.get("tollgate-shadow")).toBe("rate_limited");
      // A refusal charges nothing: the state stays at the first request's, 0 left and 60 s to go.
      expect(over.headers.get("x-ratelimit-remaining")).toBe("0");
      expect(over.headers.get("ratelimit")).toBe('"request-ip-60s";r=0;t=60');
    }
    expect(await originLog(tag)).toHaveLength(3);
    const decisions = lines.map((line) => JSON.parse(line) as { event?: string; decision?: string }).filter((l) => l.event === "request").map((l) => l.decision);
    expect(decisions).toEqual(["admitted", "shadow:rate_limited", "shadow:rate_limited", "shadow:rate_limited"]);
  });

  it("charges nothing in mode off", async () => {
    const env = limited(1, 60, { mode: "off" });
    const ip = uniqueIp();
    for (let i = 0; i < 3; i++) {
      const res = await callGateway(gatewayRequest("/off", { ip }), env);
      expect(res.status).toBe(200);
      expect(res.headers.get("ratelimit")).toBeNull();
    }
  });

  it("keys IPv6 callers by their /64, and a neighbouring /64 is another caller", async () => {
    const env = limited(1, 60);
    const group = () => ((Math.random() * 0xfffe) >>> 0).toString(16);
    const [a, b] = [group(), group()];
    const prefix = `2001:db8:${a}:${b}`;
    const next = `2001:db8:${a}:${(parseInt(b, 16) + 1).toString(16)}`;
    expect((await callGateway(gatewayRequest("/v6", { ip: `${prefix}::1` }), env)).status).toBe(200);
    // Same /64, another interface id: the same caller, refused.
    expect((await callGateway(gatewayRequest("/v6", { ip: `${prefix}:ffff:ffff:ffff:2` }), env)).status).toBe(429);
    // The neighbouring /64: another caller, admitted.
    expect((await callGateway(gatewayRequest("/v6", { ip: `${next}::1` }), env)).status).toBe(200);
  });
});

describe("request size", () => {
  it("refuses a declared body over max_request_bytes with 413 naming both numbers, before forwarding", async () => {
    const env = { TOLLGATE: { max_request_bytes: 1000 } };
    const tag = unique("size");
    const res = await callGateway(
      gatewayRequest("/upload", { method: "POST", ip: uniqueIp(), body: new Uint8Array(1001), headers: { "content-length": "1001", "x-test-tag": tag } }),
      env,
    );
    expect(res.status).toBe(413);
    const body = await problemOf(res);
    expect(body).toMatchObject({ code: "request_too_large", limit: 1000, size: 1001 });
    expect(await originLog(tag)).toHaveLength(0);
    const ok = await callGateway(
      gatewayRequest("/upload", { method: "POST", ip: uniqueIp(), body: new Uint8Array(1000), headers: { "content-length": "1000", "x-test-tag": tag } }),
      env,
    );
    expect(ok.status).toBe(200);
    expect(await originLog(tag)).toHaveLength(1);
  });
});

// Charges priced by the response (issue 15), through the Worker to
// the recording origin, which answers with a cost in a header, a JSON body or
// the last SSE event (scripts/origin.mjs: x-origin-usage-header,
// x-origin-json-usage, x-origin-sse-usage). The gateway runs on a clock the
// test holds still, so every figure is exact.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { clockedGateway, gatewayRequest, originLog, problemOf, unique } from "../helpers";
import { createTenant, mintKey, testConfig } from "./admin-helpers";

const HUGE = [{ count: 1_000_000, window_s: 1 }];

function config(source: Record<string, unknown>, tokens: Record<string, unknown>[] = [{ count: 100, window_s: 60 }], reserve = 10): Record<string, unknown> {
  return testConfig({
    routes: [{ method: "POST", path: "/v1/chat", response_charge: { category: "tokens", reserve, ...source } }],
    categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: HUGE, tenant: HUGE } }, tokens: { limits: { key: tokens } } },
  });
}

async function keyFor(cfg: Record<string, unknown>): Promise<{ tenant: string; key: string }> {
  const tenant = unique("priced");
  await createTenant(cfg, tenant);
  return { tenant, key: (await mintKey(cfg, tenant)).key };
}

function chat(key: string, headers: Record<string, string> = {}): Request {
  return gatewayRequest("/v1/chat", { method: "POST", ip: "198.51.100.70", headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers }, body: "{}" });
}

/** `r` of the RateLimit header, and the policy it names. */
function standing(res: Response): { policy: string | null; remaining: number } {
  const value = res.headers.get("ratelimit") ?? "";
  return { policy: res.headers.get("ratelimit-policy"), remaining: Number(/;r=(\d+)/.exec(value)?.[1] ?? NaN) };
}

describe("a cost in a response header", () => {
  const CONFIG = config({ header: "x-usage-total-tokens" });

  it("charges the debt past the reserve, in that same response's RateLimit headers", async () => {
    const { key } = await keyFor(CONFIG);
    const gateway = clockedGateway(CONFIG);
    const res = await gateway.call(chat(key, { "x-origin-usage-header": "25" }), { settle: true });
    expect(res.status).toBe(200);
    // Reserve 10 admitted, then 15 more: 75 of the 100 left.
    expect(standing(res)).toMatchObject({ remaining: 75 });
    expect(standing(res).policy).toContain('"tokens-key-60s"');
  });

  it("makes the caller wait out a debt with the exact retry delay", async () => {
    const { key } = await keyFor(CONFIG);
    const gateway = clockedGateway(CONFIG);
    // 100 per 60 s: T = 600 ms. 250 tokens put the state 150 s ahead; a new
    // reserve of 10 (6 s) fits once it is within the burst (60 s): 96 s.
    expect((await gateway.call(chat(key, { "x-origin-usage-header": "250" }), { settle: true })).status).toBe(200);
    const refused = await gateway.call(chat(key), { settle: true });
    expect(refused.status).toBe(429);
    expect(await problemOf(refused)).toMatchObject({ code: "rate_limited", category: "tokens", retry_after_ms: 96_000 });
    gateway.clock.nowMs += 95_999;
    expect((await gateway.call(chat(key), { settle: true })).status).toBe(429);
    gateway.clock.nowMs += 1;
    expect((await gateway.call(chat(key, { "x-origin-usage-header": "10" }), { settle: true })).status).toBe(200);
  });

  it("refunds a cost below the reserve", async () => {
    const { key } = await keyFor(CONFIG);
    const gateway = clockedGateway(CONFIG);
    await gateway.call(chat(key, { "x-origin-usage-header": "3" }), { settle: true });
    // Reserve 10 then 7 back: the next answer shows 97 left before its own reserve, 87 after it.
    const next = await gateway.call(chat(key, { "x-origin-usage-header": "10" }), { settle: true });
    expect(standing(next).remaining).toBe(87);
  });

  it("shows a refund in that same response's RateLimit headers", async () => {
    const { key } = await keyFor(CONFIG);
    const gateway = clockedGateway(CONFIG);
    // Reserve 10, cost 3: the answer already shows the 7 back (97 left of 100), not the admission's 90.
    const res = await gateway.call(chat(key, { "x-origin-usage-header": "3" }), { settle: true });
    expect(standing(res).remaining).toBe(97);
  });

  for (const [what, header] of [
    ["missing", {}],
    ["malformed", { "x-origin-usage-header": "12.5" }],
    ["negative", { "x-origin-usage-header": "-4" }],
  ] as const) {
    it(`keeps the reserve when the cost is ${what}, with no error to the client`, async () => {
      const { key } = await keyFor(CONFIG);
      const gateway = clockedGateway(CONFIG);
      const res = await gateway.call(chat(key, header), { settle: true });
      expect(res.status).toBe(200);
      expect(standing(res).remaining).toBe(90);
    });
  }

  it("charges a cost above the burst whole, then refuses until it is earned back", async () => {
    const { key } = await keyFor(CONFIG);
    const gateway = clockedGateway(CONFIG);
    expect((await gateway.call(chat(key, { "x-origin-usage-header": "5000" }), { settle: true })).status).toBe(200);
    const refused = await gateway.call(chat(key), { settle: true });
    // 5,000 tokens at 600 ms each: 3,000 s ahead, less the 60 s burst, plus the 6 s reserve.
    expect(await problemOf(refused)).toMatchObject({ code: "rate_limited", retry_after_ms: 2_946_000 });
  });

  it("keeps concurrent calls of one caller within the limit by their reserves", async () => {
    const cfg = config({ header: "x-usage-total-tokens" }, [{ count: 100, window_s: 60 }], 40);
    const { key } = await keyFor(cfg);
    const gateway = clockedGateway(cfg);
    const tag = unique("concurrent");
    const answers = await Promise.all(Array.from({ length: 3 }, () => gateway.call(chat(key, { "x-origin-usage-header": "40", "x-origin-delay-ms": "200", "x-test-tag": tag }), { settle: true })));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 429]);
    // The refused one never reached the origin.
    expect(await originLog(tag)).toHaveLength(2);
  });

  it("meters the actual cost as units:tokens in the tenant's month", async () => {
    const { tenant, key } = await keyFor(CONFIG);
    const gateway = clockedGateway(CONFIG, {}, Date.now());
    await gateway.call(chat(key, { "x-origin-usage-header": "33" }), { settle: true });
    await gateway.call(chat(key), { settle: true }); // no cost found: the reserve (10) is what it cost
    const { database } = await import("../../src/db/client");
    await gateway.runtime.meter.flushNow(database(env.DB), gateway.clock.nowMs);
    const row = await env.DB.prepare("SELECT value FROM usage_monthly WHERE tenant = ? AND metric = 'units:tokens'").bind(tenant).first<{ value: number }>();
    expect(row?.value).toBe(43);
  });
});

describe("a cost in the response body", () => {
  it("reads usage.total_tokens from a JSON body and settles it once the body has been read", async () => {
    const cfg = config({ json: "usage.total_tokens" });
    const { key } = await keyFor(cfg);
    const gateway = clockedGateway(cfg);
    const res = await gateway.call(chat(key, { "x-origin-json-usage": "42" }), { settle: true });
    expect(res.status).toBe(200);
    // The body reached the client whole, usage included.
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = await res.text();
    expect((JSON.parse(body) as { usage: { total_tokens: number } }).usage.total_tokens).toBe(42);
    const next = await gateway.call(chat(key, { "x-origin-json-usage": "1" }), { settle: true });
    // 42 charged, then this request's reserve of 10: 48 left.
    expect(standing(next).remaining).toBe(48);
  });

  it("reads the last SSE data event that carries the path", async () => {
    const cfg = config({ json: "usage.total_tokens" });
    const { key } = await keyFor(cfg);
    const gateway = clockedGateway(cfg);
    const res = await gateway.call(chat(key, { "x-origin-sse-usage": "37", "x-origin-sse-events": "50" }), { settle: true });
    expect(res.status).toBe(200);
    const next = await gateway.call(chat(key, { "x-origin-sse-usage": "none" }), { settle: true });
    expect(standing(next).remaining).toBe(53);
  });

  it("settles from what the origin sent when the client hangs up mid-stream", async () => {
    const cfg = config({ json: "usage.total_tokens" });
    const { key } = await keyFor(cfg);
    const gateway = clockedGateway(cfg);
    const ctx = createExecutionContext();
    const res = await gateway.runtime.gateway(chat(key, { "x-origin-sse-usage": "61", "x-origin-sse-events": "20", "x-origin-sse-interval-ms": "20" }), env as never, ctx);
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel("client went away");
    await waitOnExecutionContext(ctx);
    const next = await gateway.call(chat(key, { "x-origin-sse-usage": "none" }), { settle: true });
    expect(standing(next).remaining).toBe(29);
  });
});

import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { callGateway, eventually, gatewayRequest, originLog, problemOf, runtimeOf, unique } from "../helpers";
import { createTenant, mintKey, testConfig } from "./admin-helpers";

const BIG = [{ count: 1_000_000, window_s: 1 }];
const CONFIG = testConfig({
  categories: { admin: { limits: { admin: BIG } }, request: { limits: { key: BIG, tenant: BIG, ip: BIG } } },
});

function slow(key: string | null, tag: string, delayMs: number, config: Record<string, unknown> = CONFIG, ip = "198.51.100.60"): Promise<Response> {
  const headers: Record<string, string> = { "x-test-tag": tag, "x-origin-delay-ms": String(delayMs) };
  if (key !== null) headers.authorization = `Bearer ${key}`;
  return callGateway(gatewayRequest("/slow", { headers, ip }), { TOLLGATE: config });
}

/** The status, with the body read, so the slot it held is given back (an unread body holds its slot). */
async function statusOf(response: Promise<Response>): Promise<number> {
  const res = await response;
  await res.arrayBuffer();
  return res.status;
}

async function drain(responses: Response[]): Promise<void> {
  await Promise.all(responses.map((r) => r.arrayBuffer()));
}

describe("in-flight limits", () => {
  it("lets exactly 512 of 600 concurrent requests of one key reach the origin, and frees every slot after", async () => {
    const tenant = unique("inflight");
    await createTenant(CONFIG, tenant);
    const { key } = await mintKey(CONFIG, tenant);
    const tag = unique("six-hundred");
    const responses = await Promise.all(Array.from({ length: 600 }, () => slow(key, tag, 300)));
    const refused = responses.filter((r) => r.status === 429);
    expect(responses.filter((r) => r.status === 200)).toHaveLength(512);
    expect(refused).toHaveLength(88);
    expect(refused[0]!.headers.get("retry-after")).toBe("1");
    const body = await problemOf(refused[0]!);
    expect(body.code).toBe("too_many_in_flight");
    await drain(responses.filter((r) => r.status === 200));
    expect((await originLog(tag)).length).toBe(512);
    await eventually(() => runtimeOf(CONFIG).inFlight.total === 0, "every slot is back");
    // The slots are back: the same key is admitted again.
    expect(await statusOf(slow(key, unique("after"), 0))).toBe(200);
  }, 60_000);

  it("frees the slot of a client that goes away mid-response", async () => {
    const tight = testConfig({ ...CONFIG, in_flight: { per_credential: 1 } });
    const tenant = unique("abort");
    await createTenant(tight, tenant);
    const { key, id } = await mintKey(tight, tenant);
    const big = await callGateway(gatewayRequest("/big", { headers: { authorization: `Bearer ${key}`, "x-origin-body-bytes": String(8 * 1024 * 1024) }, ip: "198.51.100.61" }), { TOLLGATE: tight });
    expect(big.status).toBe(200);
    // While the body is unread, the slot is held.
    expect(await statusOf(slow(key, unique("held"), 0, tight))).toBe(429);
    const reader = big.body!.getReader();
    await reader.read();
    await reader.cancel("client went away");
    await eventually(() => runtimeOf(tight).inFlight.countOf(`key:${id}`) === 0, "the slot is freed");
    expect(await statusOf(slow(key, unique("freed"), 0, tight))).toBe(200);
  });

  it("holds a slot until the body is fully read, then frees it", async () => {
    const tight = testConfig({ ...CONFIG, in_flight: { per_credential: 1 } });
    const tenant = unique("read");
    await createTenant(tight, tenant);
    const { key, id } = await mintKey(tight, tenant);
    const res = await callGateway(gatewayRequest("/body", { headers: { authorization: `Bearer ${key}`, "x-origin-body-bytes": "300000" }, ip: "198.51.100.62" }), { TOLLGATE: tight });
    expect(await statusOf(slow(key, unique("busy"), 0, tight))).toBe(429);
    expect((await res.arrayBuffer()).byteLength).toBe(300000);
    await eventually(() => runtimeOf(tight).inFlight.countOf(`key:${id}`) === 0, "the slot is freed");
    expect(await statusOf(slow(key, unique("free"), 0, tight))).toBe(200);
  });

  it("frees the slot when the origin is unreachable", async () => {
    const tight = testConfig({ ...CONFIG, in_flight: { per_credential: 1 } });
    const tenant = unique("down");
    await createTenant(tight, tenant);
    const { key } = await mintKey(tight, tenant);
    const down = await callGateway(gatewayRequest("/x", { headers: { authorization: `Bearer ${key}` }, ip: "198.51.100.63" }), { TOLLGATE: tight, ORIGIN_URL: "http://127.0.0.1:1" });
    expect(down.status).toBe(502);
    await down.arrayBuffer();
    expect(await statusOf(slow(key, unique("up"), 0, tight))).toBe(200);
  });

  it("caps one tenant at tenant_share of the budget across its keys, and one key at credential_share", async () => {
    // budget 8: a key may hold 2 (0.25), a tenant 4 (0.5).
    const shares = testConfig({ ...CONFIG, in_flight: { budget: 8, per_credential: 512, credential_share: 0.25, tenant_share: 0.5 } });
    const t1 = unique("share");
    const t2 = unique("share");
    await createTenant(shares, t1);
    await createTenant(shares, t2);
    const keys = await Promise.all([mintKey(shares, t1), mintKey(shares, t1), mintKey(shares, t1), mintKey(shares, t2)]);
    const tag = unique("shares");
    const [a, b, c, d] = keys.map((k) => k.key) as [string, string, string, string];
    // One request each first, so every key is cached and the slots below are taken in call order.
    for (const k of [a, b, c, d]) await (await slow(k, unique("warm"), 0, shares)).arrayBuffer();
    // A slot is released when the delivery pipe settles, just after the body is read.
    await eventually(() => runtimeOf(shares).inFlight.total === 0, "every slot is back");
    const batch = await Promise.all([
      ...Array.from({ length: 3 }, () => slow(a, tag, 300, shares)),
      ...Array.from({ length: 3 }, () => slow(b, tag, 300, shares)),
      ...Array.from({ length: 1 }, () => slow(c, tag, 300, shares)),
      ...Array.from({ length: 2 }, () => slow(d, tag, 300, shares)),
    ]);
    const statuses = batch.map((r) => r.status);
    // Key a: 2 of 3; key b: 2 of 3 (tenant t1 now at 4); key c: refused (tenant full); key d (t2): 2 of 2.
    expect(statuses).toEqual([200, 200, 429, 200, 200, 429, 429, 200, 200]);
    await drain(batch.filter((r) => r.status === 200));
  });

  it("holds the slot of a response-priced stream until the origin's body has ended, then frees it", async () => {
    // The cost tap reads the origin's body to its end anyway: that end releases the slot (no second stream in the client's path).
    const priced = testConfig({
      ...CONFIG,
      in_flight: { per_credential: 1 },
      routes: [{ method: "POST", path: "/v1/chat", response_charge: { category: "tokens", json: "usage.total_tokens", reserve: 1 } }],
    });
    const tenant = unique("priced-slot");
    await createTenant(priced, tenant);
    const { key, id } = await mintKey(priced, tenant);
    const auth = { authorization: `Bearer ${key}` };
    const stream = await callGateway(
      gatewayRequest("/v1/chat", { method: "POST", ip: "198.51.100.65", headers: { ...auth, "x-origin-sse-usage": "42", "x-origin-sse-events": "10", "x-origin-sse-interval-ms": "40" }, body: "{}" }),
      { TOLLGATE: priced },
    );
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    // While the origin is still sending, the slot is held.
    expect(await statusOf(slow(key, unique("while"), 0, priced))).toBe(429);
    const text = await stream.text();
    expect(text).toContain('"total_tokens":42');
    await eventually(() => runtimeOf(priced).inFlight.countOf(`key:${id}`) === 0, "the slot is freed");
    expect(await statusOf(slow(key, unique("after"), 0, priced))).toBe(200);
  });

  it("frees the slot of a response-priced stream whose client stops reading, once the origin's body has ended", async () => {
    const priced = testConfig({
      ...CONFIG,
      in_flight: { per_credential: 1 },
      routes: [{ method: "POST", path: "/v1/chat", response_charge: { category: "tokens", json: "usage.total_tokens", reserve: 1 } }],
    });
    const tenant = unique("priced-cancel");
    await createTenant(priced, tenant);
    const { key, id } = await mintKey(priced, tenant);
    const stream = await callGateway(
      gatewayRequest("/v1/chat", { method: "POST", ip: "198.51.100.66", headers: { authorization: `Bearer ${key}`, "x-origin-sse-usage": "7", "x-origin-sse-events": "10", "x-origin-sse-interval-ms": "20" }, body: "{}" }),
      { TOLLGATE: priced },
    );
    const reader = stream.body!.getReader();
    await reader.read();
    await reader.cancel("client stopped reading");
    await eventually(() => runtimeOf(priced).inFlight.countOf(`key:${id}`) === 0, "the slot is freed");
  });

  it("takes no slot in mode off: a streamed answer is the origin's body, held by nothing", async () => {
    const off = testConfig({ ...CONFIG, mode: "off", in_flight: { per_credential: 1 } });
    const ip = "198.51.100.67";
    const first = await callGateway(gatewayRequest("/big-off", { ip, headers: { "x-origin-body-bytes": String(2 * 1024 * 1024) } }), { TOLLGATE: off });
    // The first body is unread; a second request of the same caller is still forwarded, and nothing is counted.
    const second = await callGateway(gatewayRequest("/big-off", { ip, headers: { "x-origin-body-bytes": "100" } }), { TOLLGATE: off });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(runtimeOf(off).inFlight.total).toBe(0);
    expect((await first.arrayBuffer()).byteLength).toBe(2 * 1024 * 1024);
    expect((await second.arrayBuffer()).byteLength).toBe(100);
  });

  it("leaves a small answer whole for a client that reads it only after the background work is done", async () => {
    // Regression: the settlement once cancelled the answer of every request
    // that had a request.signal, as if its client had gone.
    const tenant = unique("late-reader");
    await createTenant(CONFIG, tenant);
    const { key } = await mintKey(CONFIG, tenant);
    const ctx = createExecutionContext();
    const res = await worker.fetch(gatewayRequest("/small", { ip: "198.51.100.64", headers: { authorization: `Bearer ${key}`, "x-origin-body-bytes": "100" } }) as never, { ...env, TOLLGATE: CONFIG } as never, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(100);
  });
});

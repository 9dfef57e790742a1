// What a stream pays (issue 14): the open's charges with its
// prepaid stream rent (all or nothing), rent at the start of every period
// while it stays open, the 4429 close and its retry delay when rent or a
// message is refused, the per-credential bound, message charging, shadow
// mode, and stream_seconds metering through to the export. The gateways here
// run on a clock the test holds still, so every retry delay is exact; the
// rent timer itself runs in real time (rent_period_s: 1).
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { database } from "../../src/db/client";
import { wouldAdmit } from "../../src/engine/gcra";
import { compileLimits } from "../../src/engine/limit";
import { clockedGateway, eventually, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, mintKey, testConfig } from "./admin-helpers";
import { clientOf, originClose, originStream, upgradeRequest } from "./streams-helpers";

const BIG = [{ count: 1_000_000, window_s: 1 }];
const ADMIN = testConfig({ categories: { admin: { limits: { admin: BIG } } } });

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

function config(extra: Record<string, unknown>, categories: Record<string, unknown> = {}): Record<string, unknown> {
  return testConfig({ ...extra, categories: { admin: { limits: { admin: BIG } }, ...categories } });
}

function reasonOf(reason: string): { code: string; retry_after_ms: number } {
  return JSON.parse(reason) as { code: string; retry_after_ms: number };
}

describe("the open", () => {
  it("prepays one stream_rent unit: refused at open with the 429 problem and no upgrade", async () => {
    // 1 per hour: T = 3,600,000 ms.
    const gw = clockedGateway(config({}, { stream_rent: { limits: { ip: [{ count: 1, window_s: 3600 }] } } }));
    const ip = uniqueIp();
    const first = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip, tag: unique("first") })));
    const tag = unique("second");
    const refused = await gw.call(upgradeRequest("/__origin/ws", { ip, tag }));
    expect(refused.status).toBe(429);
    expect(refused.webSocket).toBeNull();
    expect(refused.headers.get("retry-after")).toBe("3600");
    expect(await problemOf(refused)).toMatchObject({ code: "rate_limited", category: "stream_rent", retry_after_ms: 3_600_000 });
    expect(await originLog(tag)).toEqual([]);
    expect(gw.runtime.streams.countOf(`ip:${ip}`)).toBe(1);
    first.socket.close(1000, "done");
    await first.closing();
  });

  it("charges the open's request and rent all or nothing: a refused request spends no rent", async () => {
    const rent = compileLimits([{ count: 5, window_s: 3600 }]);
    const gw = clockedGateway(config({}, { request: { limits: { ip: [{ count: 1, window_s: 3600 }] } }, stream_rent: { limits: { ip: [{ count: 5, window_s: 3600 }] } } }));
    const ip = uniqueIp();
    expect((await gw.call(gatewayRequest("/plain", { ip }), { settle: true })).status).toBe(200);
    const refused = await gw.call(upgradeRequest("/__origin/ws", { ip, tag: unique("all-or-nothing") }));
    expect(await problemOf(refused)).toMatchObject({ code: "rate_limited", category: "request" });
    // All five units of rent are still there.
    expect(wouldAdmit(gw.runtime.limiter, [{ subject: `ip:${ip}`, category: "stream_rent", limits: rent, cost: 5 }], gw.clock.nowMs).allowed).toBe(true);
  });
});

describe("an exempt path", () => {
  it("exempts a request but not a stream: an upgrade there pays its rent and holds a slot", async () => {
    const gw = clockedGateway(config({ exempt_paths: ["/__origin/free"] }, { stream_rent: { limits: { ip: [{ count: 1, window_s: 3600 }] } } }));
    const ip = uniqueIp();
    const first = clientOf(await gw.call(upgradeRequest("/__origin/free", { ip, tag: unique("exempt") })));
    expect(gw.runtime.streams.countOf(`ip:${ip}`)).toBe(1);
    const tag = unique("exempt-second");
    const refused = await gw.call(upgradeRequest("/__origin/free", { ip, tag }));
    expect(await problemOf(refused)).toMatchObject({ code: "rate_limited", category: "stream_rent" });
    expect(await originLog(tag)).toEqual([]);
    // A plain request to the same path is still exempt: forwarded, no RateLimit headers.
    const plain = await gw.call(gatewayRequest("/__origin/free", { ip }), { settle: true });
    expect(plain.status).toBe(200);
    expect(plain.headers.get("ratelimit-policy")).toBeNull();
    first.socket.close(1000, "done");
    await first.closing();
  });
});

describe("rent while open", () => {
  it("pays one unit at the start of every period, then closes 4429 with the delay of the replacement's open, and 1001 to the origin", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    // 3 per hour: the open and two periods are paid, the third period is refused. T = 1,200,000 ms.
    // The rent's interval runs on timers the test advances (sockets stay real).
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const gw = clockedGateway(config({ request_log: true, streams: { rent_period_s: 1 } }, { stream_rent: { limits: { ip: [{ count: 3, window_s: 3600 }] } } }));
    const ip = uniqueIp();
    const tag = unique("rent");
    const path = `/__origin/ws/${tag}`;
    const client = clientOf(await gw.call(upgradeRequest(path, { ip, tag })));
    client.send("still here");
    await client.received(1);
    vi.advanceTimersByTime(2000);
    expect(gw.runtime.streams.countOf(`ip:${ip}`)).toBe(1);
    vi.advanceTimersByTime(1000);
    const closed = await client.closing();
    expect(closed.code).toBe(4429);
    // The clock stood still: the next spend of one unit fits after exactly T.
    expect(reasonOf(closed.reason)).toEqual({ code: "rate_limited", retry_after_ms: 1_200_000 });
    expect(await originClose(tag)).toEqual({ code: 1001, reason: "rate_limited", by: "peer" });
    await eventually(() => gw.runtime.streams.countOf(`ip:${ip}`) === 0, "the slot is given back");
    const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.event === "stream" && l.path === path);
    expect(line).toMatchObject({ ended_by: "rent_refused", close_code: 4429, rent_periods: 3, decision: "rate_limited", messages_in: 1, messages_out: 1 });

    // The delay is exact: the replacement's open is refused 1 ms before it and admitted at it.
    gw.clock.nowMs += 1_200_000 - 1;
    const early = await gw.call(upgradeRequest("/__origin/ws", { ip, tag: unique("early") }));
    expect(await problemOf(early)).toMatchObject({ code: "rate_limited", category: "stream_rent", retry_after_ms: 1 });
    gw.clock.nowMs += 1;
    const reopened = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip, tag: unique("reopened") })));
    reopened.socket.close(1000, "done");
    await reopened.closing();
  });

  it("stops charging rent once the stream ends", async () => {
    // The rent's interval runs on timers the test advances (sockets and polling stay real).
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const rent = compileLimits([{ count: 3, window_s: 3600 }]);
    const gw = clockedGateway(config({ streams: { rent_period_s: 1 } }, { stream_rent: { limits: { ip: [{ count: 3, window_s: 3600 }] } } }));
    const ip = uniqueIp();
    const tag = unique("stopped");
    const probe = [{ subject: `ip:${ip}`, category: "stream_rent", limits: rent, cost: 1 }];
    const left = () => wouldAdmit(gw.runtime.limiter, probe, gw.clock.nowMs);
    const client = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip, tag })));
    // Open: one unit. One period: a second. Exactly one is left (a spend would leave none).
    vi.advanceTimersByTime(1000);
    expect(left()).toMatchObject({ allowed: true, tightest: { remaining: 0 } });
    client.socket.close(1000, "short");
    await originClose(tag);
    // Many periods later the last unit is still there: the interval stopped with the stream.
    vi.advanceTimersByTime(10_000);
    expect(left()).toMatchObject({ allowed: true, tightest: { remaining: 0 } });
  });

  it("logs a refusal in shadow mode and keeps the stream open", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    const gw = clockedGateway(config({ mode: "shadow", request_log: true, streams: { rent_period_s: 1 } }, { stream_rent: { limits: { ip: [{ count: 1, window_s: 3600 }] } } }));
    const path = `/__origin/ws/${unique("shadow")}`;
    const client = clientOf(await gw.call(upgradeRequest(path, { ip: uniqueIp(), tag: unique("shadow") })));
    vi.advanceTimersByTime(1000);
    expect(lines.some((l) => l.includes('"event":"stream_shadow_refusal"') && l.includes(path)), "the refused rent is logged").toBe(true);
    client.send("still open");
    expect(await client.received(1)).toEqual(["still open"]);
    client.socket.close(1000, "done");
    await client.closing();
    const line = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.event === "stream" && l.path === path);
    expect(line).toMatchObject({ decision: "shadow:rate_limited", ended_by: "client_closed", close_code: 1000 });
  });
});

describe("the per-credential bound", () => {
  it("refuses a credential's stream past streams.per_credential with 429 too_many_streams, until one closes", async () => {
    const tenant = unique("bound");
    await createTenant(ADMIN, tenant);
    const { key, id } = await mintKey(ADMIN, tenant);
    const gw = clockedGateway(config({ streams: { per_credential: 2 } }));
    const auth = { authorization: `Bearer ${key}` };
    const open = () => gw.call(upgradeRequest("/__origin/ws", { ip: uniqueIp(), tag: unique("bound"), headers: auth }));
    const a = clientOf(await open());
    const b = clientOf(await open());
    const tag = unique("third");
    const third = await gw.call(upgradeRequest("/__origin/ws", { ip: uniqueIp(), tag, headers: auth }));
    expect(third.status).toBe(429);
    expect(third.webSocket).toBeNull();
    expect(third.headers.get("retry-after")).toBe("1");
    expect(await problemOf(third)).toMatchObject({ code: "too_many_streams", limit: 2 });
    expect(await originLog(tag)).toEqual([]);
    // Another caller is not held back.
    const other = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip: uniqueIp(), tag: unique("other") })));
    expect(gw.runtime.streams.countOf(`key:${id}`)).toBe(2);
    a.socket.close(1000, "making room");
    await eventually(() => gw.runtime.streams.countOf(`key:${id}`) === 1, "the closed stream's slot is given back");
    const c = clientOf(await open());
    for (const client of [b, c, other]) client.socket.close(1000, "done");
    await eventually(() => gw.runtime.streams.total === 0, "every slot is given back");
  });
});

describe("message charging", () => {
  it("charges each client message when the caller has message limits, and closes 4429 on a refused one", async () => {
    // 2 per minute: T = 30,000 ms; the third message waits one T.
    const gw = clockedGateway(config({}, { message: { limits: { ip: [{ count: 2, window_s: 60 }] } } }));
    const ip = uniqueIp();
    const tag = unique("messages");
    const client = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip, tag })));
    client.send("one");
    client.send("two");
    expect(await client.received(2)).toEqual(["one", "two"]);
    client.send("three");
    const closed = await client.closing();
    expect(closed.code).toBe(4429);
    expect(reasonOf(closed.reason)).toEqual({ code: "rate_limited", retry_after_ms: 30_000 });
    expect(await originClose(tag)).toMatchObject({ code: 1001, reason: "rate_limited" });
    const seen = await originStream(tag);
    expect(seen.messages).toEqual([{ text: "one" }, { text: "two" }]);
    await eventually(() => gw.runtime.streams.countOf(`ip:${ip}`) === 0, "the slot is given back");
  });

  it("charges nothing per message when the caller has no message limits", async () => {
    // Limits for keys only: an anonymous caller has none.
    const gw = clockedGateway(config({}, { message: { limits: { key: [{ count: 1, window_s: 3600 }] } } }));
    const tag = unique("free");
    const client = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip: uniqueIp(), tag })));
    for (let i = 0; i < 50; i++) client.send(`m${i}`);
    expect(await client.received(50)).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`));
    expect(client.closed).toBeNull();
    client.socket.close(1000, "done");
    await client.closing();
  });
});

describe("metering", () => {
  it("meters stream_seconds per tenant and month, rounded up per stream, into the export", async () => {
    const tenant = unique("stream-meter");
    await createTenant(ADMIN, tenant);
    const { key } = await mintKey(ADMIN, tenant);
    const gw = clockedGateway(config({ usage: { flush_interval_s: 0.001 } }));
    const client = clientOf(await gw.call(upgradeRequest("/__origin/ws", { ip: uniqueIp(), tag: unique("meter"), headers: { authorization: `Bearer ${key}` } })));
    gw.clock.nowMs += 2_500;
    client.socket.close(1000, "done");
    await client.closing();
    await gw.runtime.meter.flushNow(database(env.DB), Date.now());
    const period = new Date(gw.clock.nowMs).toISOString().slice(0, 7);
    const rows = await env.DB.prepare("SELECT metric, value FROM usage_monthly WHERE tenant = ? AND period = ?").bind(tenant, period).all<{ metric: string; value: number }>();
    expect(Object.fromEntries(rows.results.map((r) => [r.metric, r.value]))).toEqual({ requests: 1, stream_seconds: 3 });
    const exported = await adminCall("GET", `/usage/export?from=${period}&to=${period}&format=ndjson`, ADMIN);
    expect(exported.status).toBe(200);
    const exportedRows = new TextDecoder()
      .decode(await exported.arrayBuffer())
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((r) => r.tenant === tenant);
    expect(exportedRows).toContainEqual(expect.objectContaining({ tenant, period, metric: "stream_seconds", value: 3 }));
  });
});

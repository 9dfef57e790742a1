// Traffic rollups through the Worker: requests counted per minute, tenant and
// decision in the isolate, written to D1 by a flush (the admin read flushes
// this isolate first), read back exactly with GET /traffic; the callers
// refused most with GET /traffic/top-refused, addresses only as digests that
// explain accepts; a flush with D1 down keeps the counts for the next one;
// two flushes of one minute add up; shadow mode's would-be refusals and an
// origin's failures are not refusals of the caller.
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { database } from "../../src/db/client";
import { TrafficRecorder } from "../../src/db/traffic-recorder";
import { callGateway, gatewayRequest, runtimeOf, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, jsonOf, keyedCall, mintKey, testConfig } from "./admin-helpers";

const CONFIG = testConfig({ categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { key: [{ count: 5, window_s: 60 }], ip: [{ count: 3, window_s: 60 }] } } } });

interface Minute {
  minute: string;
  admitted: number;
  refused: number;
  decisions: Record<string, number>;
}

function sum(minutes: Minute[], decision: string): number {
  return minutes.reduce((n, m) => n + (m.decisions[decision] ?? 0), 0);
}

/**
 * GET /traffic/top-refused reads the 20 callers refused most since `minutes`
 * ago, with no upper bound, from the D1 every file of this runner shares: a
 * file run before this one that refused 20 callers more often would push
 * ours out. So this file runs with Date set far ahead, where no other file
 * writes (only Date: timers and I/O run as usual), each test a day after the
 * one before and 30 s into a minute (GET /traffic reads the minutes that
 * start before now). One fake clock for the whole file: a runtime compiled
 * under it keeps calling it.
 */
const OWN_TIME_MS = Date.UTC(2091, 0, 1, 0, 0, 30);
let ownDays = 0;
beforeAll(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
});
beforeEach(() => {
  vi.setSystemTime(OWN_TIME_MS + ownDays++ * 86_400_000);
});
afterAll(() => {
  vi.useRealTimers();
});

describe("GET /traffic", () => {
  it("shows a burst of refusals after a flush, with the counts exact", async () => {
    const tenant = unique("traffic");
    await createTenant(CONFIG, tenant);
    const { key, id } = await mintKey(CONFIG, tenant);
    for (let i = 0; i < 25; i++) await keyedCall(key, "/anything", CONFIG, { settle: true });
    const body = await jsonOf<{ tenant: string; minutes: Minute[] }>(await adminCall("GET", `/traffic?tenant=${tenant}`, CONFIG), 200);
    expect(body.tenant).toBe(tenant);
    expect(sum(body.minutes, "admitted")).toBe(5);
    expect(sum(body.minutes, "rate_limited")).toBe(20);
    expect(body.minutes.reduce((n, m) => n + m.refused, 0)).toBe(20);
    expect(body.minutes.reduce((n, m) => n + m.admitted, 0)).toBe(5);

    const top = await jsonOf<{ callers: { caller: string; tenant: string; refused: number; explain: string }[] }>(await adminCall("GET", "/traffic/top-refused?minutes=10", CONFIG), 200);
    const mine = top.callers.find((c) => c.caller === `key:${id}`);
    expect(mine).toMatchObject({ tenant, refused: 20, explain: `/_tollgate/admin/v1/callers/key%3A${id}` });
  });

  it("names a refused address only by a digest, which explain accepts on this isolate", async () => {
    const ip = uniqueIp();
    for (let i = 0; i < 6; i++) await callGateway(gatewayRequest("/anon", { ip }), { TOLLGATE: CONFIG }, { settle: true });
    const top = await jsonOf<{ callers: { caller: string; refused: number }[] }>(await adminCall("GET", "/traffic/top-refused", CONFIG), 200);
    const digests = top.callers.filter((c) => c.caller.startsWith("hmac:"));
    expect(top.callers.some((c) => c.caller.includes(ip))).toBe(false);
    const stored = await env.DB.prepare("SELECT caller FROM traffic_refused").all<{ caller: string }>();
    expect(stored.results.some((r) => r.caller.includes(ip))).toBe(false);
    // Whichever digest is ours explains as our address.
    let found = false;
    for (const { caller } of digests) {
      const explained = await adminCall("GET", `/callers/${encodeURIComponent(caller)}`, CONFIG);
      if (explained.status !== 200) continue;
      const body = (await explained.json()) as { caller: string };
      if (body.caller === `ip:${ip}`) found = true;
    }
    expect(found).toBe(true);
    const unknown = await adminCall("GET", `/callers/hmac:${"0".repeat(64)}`, CONFIG);
    expect(unknown.status).toBe(404);
  });

  it("names a key refused by its block, before any lookup, as key:<id>", async () => {
    const tenant = unique("traffic-blocked-key");
    await createTenant(CONFIG, tenant);
    const { key, id } = await mintKey(CONFIG, tenant);
    await jsonOf(await adminCall("POST", "/blocks", CONFIG, { body: { target: `key:${id}` } }), 201);
    for (let i = 0; i < 3; i++) expect((await keyedCall(key, "/blocked", CONFIG, { settle: true })).status).toBe(403);
    const top = await jsonOf<{ callers: { caller: string; refused: number }[] }>(await adminCall("GET", "/traffic/top-refused?minutes=5", CONFIG), 200);
    expect(top.callers.find((c) => c.caller === `key:${id}`)?.refused).toBe(3);
  });

  it("lets the auditor read", async () => {
    const res = await adminCall("GET", "/traffic", CONFIG, { token: env.AUDITOR_TOKEN });
    expect(res.status).toBe(200);
    expect((await adminCall("GET", "/traffic/top-refused", CONFIG, { token: env.AUDITOR_TOKEN })).status).toBe(200);
  });

  it.each([
    ["/traffic?from=yesterday", "from"],
    ["/traffic?to=2030-01-01", "to"],
    ["/traffic?from=2030-01-02T00:00:00Z&to=2030-01-01T00:00:00Z", "to"],
    ["/traffic?from=2030-01-01T00:00:00Z&to=2030-02-02T00:00:01Z", "to"],
    ["/traffic?tenant=Not_A_Slug", "tenant"],
    ["/traffic/top-refused?minutes=0", "minutes"],
    ["/traffic/top-refused?minutes=99999", "minutes"],
  ])("answers %s with 400 naming %s", async (path, field) => {
    const res = await adminCall("GET", path, CONFIG);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: "invalid_request", field });
  });
});

describe("what counts as a refusal of the caller", () => {
  const options = { retentionMs: 7 * 86_400_000, digest: async (k: string) => `hmac:${k.length}` };

  async function topRefused(config: Record<string, unknown>, env: Record<string, unknown> = {}): Promise<{ caller: string; refused: number }[]> {
    return (await jsonOf<{ callers: { caller: string; refused: number }[] }>(await adminCall("GET", "/traffic/top-refused?minutes=5", config, { env }), 200)).callers;
  }

  it("adds up two flushes of one minute's traffic, from one isolate or two", async () => {
    const tenant = unique("two-flushes");
    const caller = `key:${unique("twice")}`;
    const nowMs = Date.now();
    const first = new TrafficRecorder();
    for (let i = 0; i < 3; i++) first.count(nowMs, tenant, "admitted", null);
    for (let i = 0; i < 2; i++) first.count(nowMs, tenant, "rate_limited", caller);
    await first.flushNow(database(env.DB), nowMs, options);
    const second = new TrafficRecorder();
    for (let i = 0; i < 4; i++) second.count(nowMs + 1, tenant, "admitted", null);
    second.count(nowMs + 1, tenant, "rate_limited", caller);
    await second.flushNow(database(env.DB), nowMs + 1, options);
    first.count(nowMs + 2, tenant, "admitted", null);
    await first.flushNow(database(env.DB), nowMs + 2, options);
    const body = await jsonOf<{ minutes: Minute[] }>(await adminCall("GET", `/traffic?tenant=${tenant}`, CONFIG), 200);
    expect(body.minutes).toHaveLength(1);
    expect(body.minutes[0]).toMatchObject({ admitted: 8, refused: 3, decisions: { admitted: 8, rate_limited: 3 } });
    expect((await topRefused(CONFIG)).find((c) => c.caller === caller)?.refused).toBe(3);
  });

  it("counts shadow mode's would-be refusals as admitted, and never names their caller among the refused", async () => {
    const shadow = { ...CONFIG, mode: "shadow" };
    const tenant = unique("traffic-shadow");
    await createTenant(shadow, tenant);
    const { key, id } = await mintKey(shadow, tenant);
    // 5 per minute: the last 3 of 8 would have been refused, and all 8 are forwarded.
    for (let i = 0; i < 8; i++) expect((await keyedCall(key, "/shadowed", shadow, { settle: true })).status).toBe(200);
    const body = await jsonOf<{ minutes: Minute[] }>(await adminCall("GET", `/traffic?tenant=${tenant}`, shadow), 200);
    expect(body.minutes.reduce((n, m) => n + m.refused, 0)).toBe(0);
    expect(body.minutes.reduce((n, m) => n + m.admitted, 0)).toBe(8);
    expect((await topRefused(shadow)).some((c) => c.caller === `key:${id}`)).toBe(false);
  });

  it("reads a minute's shadow:<code> rows as admitted", async () => {
    const tenant = unique("traffic-shadow-rows");
    const nowMs = Date.now();
    // What an isolate counts for a policy that only shadows (it would have refused, and forwarded).
    const recorder = new TrafficRecorder();
    recorder.count(nowMs, tenant, "admitted", null);
    for (let i = 0; i < 2; i++) recorder.count(nowMs, tenant, "shadow:rate_limited", null);
    await recorder.flushNow(database(env.DB), nowMs, options);
    const body = await jsonOf<{ minutes: Minute[] }>(await adminCall("GET", `/traffic?tenant=${tenant}`, CONFIG), 200);
    expect(body.minutes).toEqual([expect.objectContaining({ admitted: 3, refused: 0, decisions: { admitted: 1, "shadow:rate_limited": 2 } })]);
  });

  it("does not count an unreachable origin's 502 as a refusal of the caller", async () => {
    const down = { ORIGIN_URL: "http://127.0.0.1:9" };
    const tenant = unique("traffic-502");
    await createTenant(CONFIG, tenant);
    const { key, id } = await mintKey(CONFIG, tenant);
    for (let i = 0; i < 2; i++) expect((await callGateway(gatewayRequest("/down", { headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG, ...down }, { settle: true })).status).toBe(502);
    const body = await jsonOf<{ minutes: Minute[] }>(await adminCall("GET", `/traffic?tenant=${tenant}`, CONFIG, { env: down }), 200);
    expect(body.minutes.reduce((n, m) => n + m.refused, 0)).toBe(0);
    expect(body.minutes.reduce((n, m) => n + Object.values(m.decisions).reduce((a, b) => a + b, 0), 0)).toBe(2);
    expect((await topRefused(CONFIG, down)).some((c) => c.caller === `key:${id}`)).toBe(false);
    // An origin's failure recorded as such (a decision of its own) is no refusal either.
    const recorder = new TrafficRecorder();
    recorder.count(Date.now(), tenant, "origin_unreachable", null);
    await recorder.flushNow(database(env.DB), Date.now(), options);
    const after = await jsonOf<{ minutes: Minute[] }>(await adminCall("GET", `/traffic?tenant=${tenant}`, CONFIG), 200);
    expect(after.minutes.reduce((n, m) => n + m.refused, 0)).toBe(0);
    expect(sum(after.minutes, "origin_unreachable")).toBe(1);
  });
});

describe("the traffic flush", () => {
  const options = { retentionMs: 7 * 86_400_000, digest: async (k: string) => `hmac:${k.length}` };

  it("keeps the counts in the isolate when D1 is down and writes them with the next flush", async () => {
    const recorder = new TrafficRecorder();
    const tenant = unique("flush-down");
    const nowMs = Date.now();
    for (let i = 0; i < 7; i++) recorder.count(nowMs, tenant, "admitted", null);
    const broken = { batch: () => Promise.reject(new Error("D1 is down")), prepare: () => { throw new Error("D1 is down"); } } as unknown as D1Database;
    await recorder.flushNow(database(broken), nowMs, options);
    expect(recorder.counts.pendingMinutes).toBe(1);
    recorder.count(nowMs, tenant, "admitted", null);
    await recorder.flushNow(database(env.DB), nowMs, options);
    expect(recorder.counts.pendingMinutes).toBe(0);
    const row = await env.DB.prepare("SELECT sum(count) AS n FROM traffic_minutely WHERE tenant = ?").bind(tenant).first<{ n: number }>();
    expect(row?.n).toBe(8);
  });

  it("prunes minutes older than retention_days, at most once an hour, refused callers too", async () => {
    const DAY = 86_400_000;
    const MINUTE = 60_000;
    const tenant = unique("prune");
    const caller = `key:${unique("pruned")}`;
    const nowMs = Math.floor(Date.now() / MINUTE) * MINUTE;
    const rowsAt = async () =>
      (await env.DB.prepare("SELECT minute_ms AS m FROM traffic_minutely WHERE tenant = ? ORDER BY minute_ms").bind(tenant).all<{ m: number }>()).results.map((r) => (r.m - nowMs) / MINUTE);
    const refusedAt = async () =>
      (await env.DB.prepare("SELECT minute_ms AS m FROM traffic_refused WHERE caller = ? ORDER BY minute_ms").bind(caller).all<{ m: number }>()).results.map((r) => (r.m - nowMs) / MINUTE);
    // Written long ago by another isolate: 8 days, 7 days less 20 minutes, 7 days less 2 hours, and 6 days before now.
    const old = new TrafficRecorder();
    for (const ago of [8 * DAY, 7 * DAY - 20 * MINUTE, 7 * DAY - 120 * MINUTE, 6 * DAY]) old.count(nowMs - ago, tenant, "rate_limited", caller);
    await old.flushNow(database(env.DB), nowMs - 8 * DAY, options);
    expect(await rowsAt()).toEqual([-8 * 1440, -7 * 1440 + 20, -7 * 1440 + 120, -6 * 1440]);
    // A flush now prunes what is older than 7 days, in both tables.
    const recorder = new TrafficRecorder();
    recorder.count(nowMs, tenant, "admitted", null);
    await recorder.flushNow(database(env.DB), nowMs, options);
    expect(await rowsAt()).toEqual([-7 * 1440 + 20, -7 * 1440 + 120, -6 * 1440, 0]);
    expect(await refusedAt()).toEqual([-7 * 1440 + 20, -7 * 1440 + 120, -6 * 1440]);
    // Half an hour later the row 7 days less 20 minutes has aged out, but a prune waits for the hour.
    recorder.count(nowMs + 30 * MINUTE, tenant, "admitted", null);
    await recorder.flushNow(database(env.DB), nowMs + 30 * MINUTE, options);
    expect(await rowsAt()).toEqual([-7 * 1440 + 20, -7 * 1440 + 120, -6 * 1440, 0, 30]);
    // An hour after the last prune it goes; the one 7 days less 2 hours is still within them.
    recorder.count(nowMs + 60 * MINUTE, tenant, "admitted", null);
    await recorder.flushNow(database(env.DB), nowMs + 60 * MINUTE, options);
    expect(await rowsAt()).toEqual([-7 * 1440 + 120, -6 * 1440, 0, 30, 60]);
    expect(await refusedAt()).toEqual([-7 * 1440 + 120, -6 * 1440]);
  });

  it("counts nothing with traffic.enabled false", async () => {
    const config = testConfig({ traffic: { enabled: false } });
    const runtime = runtimeOf(config);
    await callGateway(gatewayRequest("/off-traffic", { ip: uniqueIp() }), { TOLLGATE: config }, { settle: true });
    expect(runtime.traffic.counts.pendingMinutes).toBe(0);
  });
});

// Traffic rollups through the Worker: requests counted per minute, tenant and
// decision in the isolate, written to D1 by a flush (the admin read flushes
// this isolate first), read back exactly with GET /traffic; the callers
// refused most with GET /traffic/top-refused, addresses only as digests that
// explain accepts; a flush with D1 down keeps the counts for the next one.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
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

import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { database } from "../../src/db/client";
import { callGateway, clockedGateway, gatewayRequest, runtimeOf, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const BIG = [{ count: 1_000_000, window_s: 1 }];
const CONFIG = testConfig({
  categories: { admin: { limits: { admin: BIG } }, request: { limits: { key: BIG, tenant: BIG } } },
  routes: [
    { method: "PUT", path: "/objects/:object", quota: "store" },
    { method: "DELETE", path: "/objects/:object", quota: "release" },
  ],
  // Flush on every request, so a settled request's metering is in D1.
  usage: { flush_interval_s: 0.001 },
  request_log: true,
});


function period(nowMs = Date.now()): string {
  return new Date(nowMs).toISOString().slice(0, 7);
}

async function monthly(tenant: string): Promise<Record<string, number>> {
  const rows = await env.DB.prepare("SELECT metric, value FROM usage_monthly WHERE tenant = ? AND period = ?").bind(tenant, period()).all<{ metric: string; value: number }>();
  return Object.fromEntries(rows.results.map((r) => [r.metric, r.value]));
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("metering", () => {
  it("counts admitted requests, bytes in and bytes stored per tenant and month", async () => {
    const tenant = unique("meter");
    await createTenant(CONFIG, tenant, { quota: { bytes: { hard: 1_000_000 } } });
    const { key } = await mintKey(CONFIG, tenant);
    const auth = { authorization: `Bearer ${key}` };
    for (let i = 0; i < 5; i++) {
      await callGateway(gatewayRequest("/read", { ip: "198.51.100.80", headers: auth }), { TOLLGATE: CONFIG }, { settle: true });
    }
    await callGateway(
      gatewayRequest("/objects/m1", { method: "PUT", ip: "198.51.100.80", headers: { ...auth, "content-length": "300" }, body: new Uint8Array(300) }),
      { TOLLGATE: CONFIG },
      { settle: true },
    );
    await callGateway(
      gatewayRequest("/objects/m2", { method: "PUT", ip: "198.51.100.80", headers: { ...auth, "content-length": "200" }, body: new Uint8Array(200) }),
      { TOLLGATE: CONFIG },
      { settle: true },
    );
    await callGateway(gatewayRequest("/objects/m1", { method: "DELETE", ip: "198.51.100.80", headers: auth }), { TOLLGATE: CONFIG }, { settle: true });
    // A refused request (an unknown key) is not metered for the tenant.
    await callGateway(gatewayRequest("/read", { ip: "198.51.100.81", headers: { authorization: "Bearer tg_nope_nope" } }), { TOLLGATE: CONFIG }, { settle: true });
    await callGateway(gatewayRequest("/read", { ip: "198.51.100.80", headers: auth }), { TOLLGATE: CONFIG }, { settle: true });
    // The meter flushes at most once per interval, on a later request; drain what the last one added.
    await runtimeOf(CONFIG).meter.flushNow(database(env.DB), Date.now());
    expect(await monthly(tenant)).toEqual({ requests: 9, bytes_in: 500, bytes_stored: 200 });
    const usage = await jsonOf<Record<string, unknown>>(await adminCall("GET", `/tenants/${tenant}/usage`, CONFIG), 200);
    expect(usage.requests_this_month).toBe(9);
  });
});

describe("metering on a quiet gateway", () => {
  // The default interval: a busy isolate writes once a minute, a quiet one must not wait for another request.
  const QUIET = testConfig({ categories: CONFIG.categories, routes: CONFIG.routes, usage: { flush_interval_s: 60 } });

  it("writes what a request metered as it ends when no other request is in flight, without waiting for the interval or another request", async () => {
    const tenant = unique("quiet");
    await createTenant(QUIET, tenant, { quota: { bytes: { hard: 1_000_000 } } });
    const { key } = await mintKey(QUIET, tenant);
    const auth = { authorization: `Bearer ${key}` };
    for (const [i, bytes] of [120, 120, 120].entries()) {
      const put = gatewayRequest(`/objects/q${i}`, { method: "PUT", ip: "198.51.100.82", headers: { ...auth, "content-length": String(bytes) }, body: new Uint8Array(bytes) });
      expect((await callGateway(put, { TOLLGATE: QUIET }, { settle: true })).status).toBe(200);
    }
    expect(await monthly(tenant)).toEqual({ requests: 3, bytes_in: 360, bytes_stored: 360 });
  });
});

describe("the request log", () => {
  it("writes one JSON line per request with its fields, refusals included, and never a credential, address or query", async () => {
    const tenant = unique("log");
    await createTenant(CONFIG, tenant);
    const { key, id } = await mintKey(CONFIG, tenant);
    const lines: string[] = [];
    vi.spyOn(console, "log").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    const ip = "198.51.100.82";
    await callGateway(gatewayRequest("/logged/path?secret=query-value", { ip, headers: { authorization: `Bearer ${key}`, "x-origin-status": "201" } }), { TOLLGATE: CONFIG }, { settle: true });
    await callGateway(gatewayRequest("/logged/refused?token=abc", { ip, headers: { authorization: "Bearer tg_unknown_credential0" } }), { TOLLGATE: CONFIG }, { settle: true });
    await callGateway(gatewayRequest("/healthz", { ip }), { TOLLGATE: CONFIG }, { settle: true });
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(parsed).toHaveLength(3);
    const [ok, refused, exempt] = parsed as [Record<string, unknown>, Record<string, unknown>, Record<string, unknown>];
    expect(ok).toMatchObject({ format_version: 1, tenant, key_id: id, method: "GET", path: "/logged/path", status: 201, decision: "admitted", bytes_in: 0 });
    expect(typeof ok.at_unix_ms).toBe("number");
    expect(typeof ok.duration_ms).toBe("number");
    expect(Object.keys(ok).sort()).toEqual(["at_unix_ms", "bytes_in", "bytes_out", "decision", "duration_ms", "event", "format_version", "key_id", "level", "method", "path", "status", "tenant"]);
    expect(ok).toMatchObject({ level: "info", event: "request" });
    expect(refused).toMatchObject({ tenant: null, key_id: null, path: "/logged/refused", status: 401, decision: "invalid_credential" });
    expect(exempt).toMatchObject({ path: "/healthz", decision: "exempt", status: 200 });
    const all = lines.join("\n");
    for (const secret of [key, "tg_unknown_credential0", ip, "query-value", "token=abc", "secret="]) expect(all).not.toContain(secret);
  });

  it("is silent with request_log: false", async () => {
    const quiet = { ...CONFIG, request_log: false };
    const spy = vi.spyOn(console, "log").mockImplementation(() => {});
    await callGateway(gatewayRequest("/quiet", { ip: uniqueIp() }), { TOLLGATE: quiet }, { settle: true });
    expect(spy).not.toHaveBeenCalled();
  });
});

describe("audit of sustained limiting", () => {
  async function sustainedEvents(kind: string, sinceMs: number) {
    const rows = await env.DB.prepare("SELECT kind, actor, subject, detail FROM audit_events WHERE kind = ? AND at >= ? ORDER BY id").bind(kind, sinceMs).all<{ kind: string; actor: string; subject: string; detail: string }>();
    return rows.results;
  }

  it("records exactly one rate_limit_sustained event for 250 refusals of one caller in one window, and another in the next window", async () => {
    const windowS = 2;
    // A threshold of this test's own: files in other runners write rate_limit_sustained events to the same table
    // meanwhile, so this test counts only the events that name its threshold (118 at most: 120 refusals cross it).
    const threshold = 101 + Math.floor(Math.random() * 18);
    const config = { ...CONFIG, categories: { request: { limits: { ip: [{ count: 1, window_s: 3600 }] } } }, audit: { threshold_rejections: threshold, window_s: windowS } };
    const ip = uniqueIp();
    const startMs = Date.now();
    // The gateway's clock is the test's: the 251 requests all fall in one audit window.
    const windowMs = windowS * 1000;
    const ours = async () => (await sustainedEvents("rate_limit_sustained", startMs - windowMs)).filter((e) => (JSON.parse(e.detail) as { threshold?: number; window_s?: number }).threshold === threshold && (JSON.parse(e.detail) as { window_s?: number }).window_s === windowS);
    const gateway = clockedGateway(config, {}, Math.floor(startMs / windowMs) * windowMs + 1);
    const statuses: number[] = [];
    for (let i = 0; i < 251; i++) statuses.push((await gateway.call(gatewayRequest("/flood", { ip }), { settle: true })).status);
    expect(statuses.filter((s) => s === 429)).toHaveLength(250);
    let events = await ours();
    expect(events).toHaveLength(1);
    const detail = JSON.parse(events[0]!.detail) as Record<string, unknown>;
    expect(detail).toMatchObject({ category: "request", count: threshold + 1, threshold, window_s: windowS });
    // An address is written as a keyed digest, never as itself or a plain hash of it.
    expect(events[0]!.subject).toMatch(/^hmac:[0-9a-f]{64}$/);
    expect(JSON.stringify(events)).not.toContain(ip);
    // The last millisecond of the same window adds nothing; the next window reports again, with the same digest.
    gateway.clock.nowMs += windowMs - 2;
    await gateway.call(gatewayRequest("/flood", { ip }), { settle: true });
    expect(await ours()).toHaveLength(1);
    gateway.clock.nowMs += 1;
    for (let i = 0; i < 120; i++) await gateway.call(gatewayRequest("/flood", { ip }), { settle: true });
    events = await ours();
    expect(events).toHaveLength(2);
    expect(events[1]!.subject).toBe(events[0]!.subject);
  }, 30_000);

  it("records auth_failures_sustained once per window for one address refusing credentials", async () => {
    // A threshold of this test's own, as above: other files' events land in the same table meanwhile.
    const threshold = 10 + Math.floor(Math.random() * 30);
    const config = { ...CONFIG, audit: { threshold_rejections: threshold, window_s: 3600 } };
    const ip = uniqueIp();
    const startMs = Date.now();
    for (let i = 0; i < 70; i++) {
      await callGateway(gatewayRequest("/bad", { ip, headers: { authorization: `Bearer tg_bad${i}_x` } }), { TOLLGATE: config }, { settle: true });
    }
    const events = (await sustainedEvents("auth_failures_sustained", startMs)).filter((e) => (JSON.parse(e.detail) as { threshold?: number }).threshold === threshold);
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.detail)).toMatchObject({ category: "auth_failures", count: threshold + 1 });
  });
});

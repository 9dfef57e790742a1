// Caller operations (issue 16) through the Worker: explain shows
// every limit that applies with its source and this isolate's standing,
// reset forgets it, time-boxed overrides stop at their expiry, and blocks
// refuse before any lookup or charge.
import { describe, expect, it } from "vitest";
import { callGateway, clockedGateway, gatewayRequest, problemOf, unique, uniqueIp } from "../helpers";
import { ADMIN_BASE, AUDITOR_TOKEN, adminCall, countingDb, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const per60 = (count: number) => [{ count, window_s: 60 }];
const CONFIG = testConfig({
  routes: [{ method: "POST", path: "/search", charges: { search: 2 } }],
  // upload: a category tenants limit here with no default of its own.
  categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, search: { limits: { key: per60(20), ip: per60(4) } }, upload: {} },
});

interface Explained {
  caller: string;
  tenant: string | null;
  limits: { category: string; subject: string; source: string; scope: string; limit: { count: number; window_s: number; burst?: number }; remaining: number; reset_ms: number }[];
  override: Record<string, unknown> | null;
  block: Record<string, unknown> | null;
}

async function explain(callerKey: string, token?: string): Promise<Explained> {
  return jsonOf<Explained>(await adminCall("GET", `/callers/${encodeURIComponent(callerKey)}`, CONFIG, token === undefined ? {} : { token }), 200);
}

function entry(explained: Explained, category: string, subject: string) {
  return explained.limits.filter((l) => l.category === category && l.subject === subject);
}

describe("explain", () => {
  it("shows a limit's delay_max_ms and the routes whose charges wait for the origin's status (issue 40 item 12)", async () => {
    const config = testConfig({
      routes: [
        { method: "POST", path: "/login", charges: { login_failure: 1 }, charge_on_status: ["4xx", 500] },
        { method: "POST", path: "/search", charges: { search: 2 } },
      ],
      categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, login_failure: { limits: { ip: [{ count: 5, window_s: 900 }] } } },
    });
    const tenant = unique("explain-held");
    await createTenant(config, tenant, { limits: { request: { key: [{ count: 10, window_s: 1, delay_max_ms: 750 }] } } });
    const { id } = await mintKey(config, tenant);
    const answer = await jsonOf<Explained & { status_charges: unknown }>(await adminCall("GET", `/callers/key:${id}`, config), 200);
    expect(answer.limits.find((l) => l.category === "request" && l.subject === "key")?.limit).toEqual({ count: 10, window_s: 1, delay_max_ms: 750 });
    // A limit that never holds says nothing of it.
    expect(answer.limits.find((l) => l.category === "request" && l.subject === "tenant")?.limit).not.toHaveProperty("delay_max_ms");
    expect(answer.status_charges).toEqual([{ route: "POST /login", charges: { login_failure: 1 }, charge_on_status: ["4xx", 500] }]);
    // No route says charge_on_status: an empty list.
    expect((await jsonOf<{ status_charges: unknown }>(await adminCall("GET", `/callers/key:${id}`, CONFIG), 200)).status_charges).toEqual([]);
  });

  it("names every limit of a key with its source — key, tenant, category, builtin — and its standing after spends", async () => {
    const tenant = unique("explain");
    await createTenant(CONFIG, tenant, { limits: { request: { tenant: per60(50) }, upload: { key: per60(7) } } });
    const { id, key } = await mintKey(CONFIG, tenant, { name: "k", limits: { request: per60(10) } });
    const before = await explain(`key:${id}`);
    expect(before).toMatchObject({ caller: `key:${id}`, tenant, override: null, block: null });
    expect(entry(before, "request", "key")).toEqual([{ category: "request", subject: "key", source: "key", scope: "isolate", limit: { count: 10, window_s: 60 }, remaining: 10, reset_ms: 0 }]);
    expect(entry(before, "request", "tenant")[0]).toMatchObject({ source: "tenant", limit: { count: 50, window_s: 60 }, remaining: 50 });
    expect(entry(before, "upload", "key")[0]).toMatchObject({ source: "tenant", limit: { count: 7, window_s: 60 } });
    expect(entry(before, "search", "key")[0]).toMatchObject({ source: "category", limit: { count: 20, window_s: 60 } });
    // The tenant's upload limits name no tenant-wide entry: the built-in request default is not for upload.
    expect(entry(before, "upload", "tenant")).toEqual([]);
    // A key with no limits of its own, in a tenant with none: the built-in defaults.
    const bare = unique("bare");
    await createTenant(CONFIG, bare);
    const plain = await explain(`key:${(await mintKey(CONFIG, bare)).id}`);
    expect(entry(plain, "request", "key")[0]).toMatchObject({ source: "builtin", limit: { count: 1000, window_s: 1, burst: 2000 } });
    expect(entry(plain, "request", "tenant")[0]).toMatchObject({ source: "builtin", limit: { count: 2000, window_s: 1, burst: 4000 } });

    for (let i = 0; i < 3; i++) await callGateway(gatewayRequest("/search", { method: "POST", ip: uniqueIp(), headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG });
    const after = await explain(`key:${id}`);
    expect(entry(after, "request", "key")[0]).toMatchObject({ remaining: 7 });
    expect(entry(after, "request", "key")[0]!.reset_ms).toBeGreaterThan(17_000);
    expect(entry(after, "search", "key")[0]).toMatchObject({ remaining: 14 });
    expect(entry(after, "request", "tenant")[0]).toMatchObject({ remaining: 47 });
    // Explain charged nothing: asking again shows the same.
    expect(entry(await explain(`key:${id}`), "request", "key")[0]).toMatchObject({ remaining: 7 });
  });

  it("shows an override as the source and the override itself, for an address by its /64", async () => {
    const address = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:7::1`;
    await jsonOf(await adminCall("PUT", `/overrides/${encodeURIComponent(`ip:${address}`)}`, CONFIG, { body: { limits: { request: per60(3) }, reason: "load test" } }), 201);
    const explained = await explain(`ip:${address}`);
    expect(explained.caller).toMatch(/^ip:2001:db8:[0-9a-f]+:7::\/64$/);
    expect(entry(explained, "request", "ip")).toEqual([expect.objectContaining({ source: "override", limit: { count: 3, window_s: 60 }, remaining: 3 })]);
    expect(explained.override).toMatchObject({ reason: "load test", active: true });
    // An address without an override gets the built-in defaults for anonymous callers.
    const plain = await explain(`ip:${uniqueIp()}`);
    expect(entry(plain, "request", "ip").map((l) => [l.source, l.limit.count, l.limit.window_s])).toEqual([
      ["builtin", 6000, 60],
      ["builtin", 200000, 3600],
    ]);
  });

  it("explains a tenant and a jwt: caller, and refuses a malformed caller key naming the field", async () => {
    const tenant = unique("t-explain");
    await createTenant(CONFIG, tenant, { limits: { request: { tenant: per60(9) } } });
    const explained = await explain(`tenant:${tenant}`);
    expect(entry(explained, "request", "tenant")[0]).toMatchObject({ source: "tenant", remaining: 9 });
    const jwt = await explain(`jwt:${"a".repeat(64)}`);
    expect(entry(jwt, "request", "jwt")[0]).toMatchObject({ source: "builtin", limit: { count: 1000, window_s: 1, burst: 2000 } });
    const bad = await adminCall("GET", "/callers/pony:1", CONFIG);
    expect(bad.status).toBe(400);
    expect(await problemOf(bad)).toMatchObject({ code: "invalid_request", field: "caller_key" });
    expect((await adminCall("GET", `/callers/key:${"z".repeat(12)}`, CONFIG)).status).toBe(404);
  });

  it("resets a caller's state (audited), and the auditor may explain but not reset", async () => {
    const ip = uniqueIp();
    const limited = { ...CONFIG, categories: { ...(CONFIG.categories as object), request: { limits: { ip: per60(2) } } } };
    // The admin calls below run with the same config object, so they see this isolate's table.
    const call = () => callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: limited });
    const admin = (method: string, path: string, token?: string) => callGateway(new Request(`http://gateway.test${ADMIN_BASE}${path}`, { method, headers: { authorization: `Bearer ${token ?? "test-admin-token-0123456789abcdefghij"}` } }), { TOLLGATE: limited });
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(429);
    const seen = (await (await admin("GET", `/callers/ip:${ip}`, AUDITOR_TOKEN)).json()) as Explained;
    expect(entry(seen, "request", "ip")[0]).toMatchObject({ source: "category", remaining: 0 });
    expect((await admin("DELETE", `/callers/ip:${ip}/state`, AUDITOR_TOKEN)).status).toBe(403);
    const reset = await admin("DELETE", `/callers/ip:${ip}/state`);
    expect(reset.status).toBe(200);
    expect(await reset.json()).toMatchObject({ caller: `ip:${ip}`, reset: true, states_held: 1 });
    expect((await call()).status).toBe(200);
    const { events } = await jsonOf<{ events: { kind: string; subject: string }[] }>(await adminCall("GET", "/audit?kind=caller_state_reset&limit=5", CONFIG), 200);
    expect(events[0]?.subject).toMatch(/^hmac:/);
    expect(JSON.stringify(events)).not.toContain(ip);
  });
});

describe("reset scope", () => {
  interface AuditEvent {
    kind: string;
    subject: string;
    detail: { subjects?: string[]; limits?: number };
  }
  async function lastReset(config: Record<string, unknown>): Promise<AuditEvent> {
    const { events } = await jsonOf<{ events: AuditEvent[] }>(await adminCall("GET", "/audit?kind=caller_state_reset&limit=1", config), 200);
    return events[0]!;
  }

  it("forgets an address's own state but not the anonymous aggregate, which resets only when named", async () => {
    const limited = { ...CONFIG, categories: { ...(CONFIG.categories as object), request: { limits: { ip: per60(2), anonymous: per60(3) } } } };
    const call = (ip: string) => callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: limited });
    const [a, b] = [uniqueIp(), uniqueIp()];
    expect((await call(a)).status).toBe(200);
    expect((await call(a)).status).toBe(200);
    expect((await call(b)).status).toBe(200);
    // The aggregate (3 per minute for all anonymous addresses) is spent.
    expect((await call(uniqueIp())).status).toBe(429);

    const reset = await jsonOf<Record<string, unknown>>(await adminCall("DELETE", `/callers/ip:${a}/state`, limited), 200);
    expect(reset).toMatchObject({ caller: `ip:${a}`, reset: true, states_held: 1 });
    const audited = await lastReset(limited);
    expect(audited.detail.subjects).toEqual([audited.subject]);
    expect(audited.subject).toMatch(/^hmac:/);
    // Still spent for everyone, A included.
    expect((await call(uniqueIp())).status).toBe(429);
    expect((await call(a)).status).toBe(429);
    const aggregate = await jsonOf<Explained>(await adminCall("GET", "/callers/anonymous", limited), 200);
    expect(entry(aggregate, "request", "anonymous")[0]).toMatchObject({ source: "category", limit: { count: 3, window_s: 60 }, remaining: 0 });

    expect(await jsonOf(await adminCall("DELETE", "/callers/anonymous/state", limited), 200)).toMatchObject({ caller: "anonymous", reset: true, states_held: 1 });
    expect(await lastReset(limited)).toMatchObject({ subject: "anonymous", detail: { subjects: ["anonymous"] } });
    expect((await call(a)).status).toBe(200);
  });

  it("forgets a key's own state but not its tenant's, which resets only when named", async () => {
    const tenant = unique("shared");
    await createTenant(CONFIG, tenant, { limits: { request: { key: per60(2), tenant: per60(3) } } });
    const [k1, k2] = [await mintKey(CONFIG, tenant), await mintKey(CONFIG, tenant)];
    const call = (key: string) => callGateway(gatewayRequest("/x", { ip: uniqueIp(), headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG });
    expect((await call(k1.key)).status).toBe(200);
    expect((await call(k1.key)).status).toBe(200);
    expect((await call(k2.key)).status).toBe(200);
    expect((await call(k2.key)).status).toBe(429);

    expect(await jsonOf(await adminCall("DELETE", `/callers/key:${k1.id}/state`, CONFIG), 200)).toMatchObject({ caller: `key:${k1.id}`, states_held: 1 });
    expect(await lastReset(CONFIG)).toMatchObject({ subject: `key:${k1.id}`, detail: { subjects: [`key:${k1.id}`] } });
    // The tenant's 3 per minute is still spent, for both keys.
    expect((await call(k2.key)).status).toBe(429);
    expect((await call(k1.key)).status).toBe(429);

    expect(await jsonOf(await adminCall("DELETE", `/callers/tenant:${tenant}/state`, CONFIG), 200)).toMatchObject({ caller: `tenant:${tenant}`, states_held: 1 });
    expect(await lastReset(CONFIG)).toMatchObject({ subject: `tenant:${tenant}`, detail: { subjects: [`tenant:${tenant}`] } });
    expect((await call(k2.key)).status).toBe(200);
  });
});

describe("time-boxed overrides", () => {
  it("stops applying an override at its expiry", async () => {
    const ip = uniqueIp();
    const expiresAtMs = Date.now() + 3_600_000;
    const config = { ...CONFIG, categories: { ...(CONFIG.categories as object), request: { limits: { ip: per60(1) } } } };
    await jsonOf(await adminCall("PUT", `/overrides/ip:${ip}`, CONFIG, { body: { limits: { request: per60(100) }, expires_at: new Date(expiresAtMs).toISOString() } }), 201);
    const gateway = clockedGateway(config, {}, expiresAtMs - 10);
    const call = () => gateway.call(gatewayRequest("/x", { ip }));
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    // At its expiry the configured 1 per minute applies again (a fresh state: 1 more, then refused).
    gateway.clock.nowMs = expiresAtMs;
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(429);
  });
});

describe("blocks", () => {
  async function block(target: string, extra: Record<string, unknown> = {}): Promise<{ id: number }> {
    return jsonOf<{ id: number }>(await adminCall("POST", "/blocks", CONFIG, { body: { target, ...extra } }), 201);
  }

  it("refuses a blocked address 403 blocked, before any charge, and admits it again once the block is removed", async () => {
    const ip = uniqueIp();
    const limited = { ...CONFIG, categories: { ...(CONFIG.categories as object), request: { limits: { ip: per60(1) } } } };
    const { id } = await block(`ip:${ip}`, { reason: "<script>alert(1)</script>" });
    for (let i = 0; i < 3; i++) {
      const refused = await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: limited });
      expect(refused.status).toBe(403);
      expect((await problemOf(refused)).code).toBe("blocked");
    }
    await jsonOf(await adminCall("DELETE", `/blocks/${id}`, CONFIG), 200);
    // The three refusals charged nothing: the first request after is admitted.
    expect((await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: limited })).status).toBe(200);
  });

  it("matches networks: an IPv6 /64 and wider, IPv4, and IPv4-mapped IPv6 against an IPv4 network", async () => {
    const group = Math.floor(Math.random() * 0xfff0).toString(16);
    await block(`net:2001:db8:${group}::/48`);
    const octet = 1 + Math.floor(Math.random() * 250);
    await block(`net:10.${octet}.0.0/16`);
    const status = async (ip: string) => (await callGateway(gatewayRequest("/x", { ip }), { TOLLGATE: CONFIG })).status;
    expect(await status(`2001:db8:${group}:5::1`)).toBe(403);
    expect(await status(`2001:db8:${group}:ffff:1:2:3:4`)).toBe(403);
    expect(await status(`2001:db8:${(parseInt(group, 16) + 1).toString(16)}::1`)).toBe(200);
    expect(await status(`10.${octet}.3.4`)).toBe(403);
    expect(await status(`::ffff:10.${octet}.9.9`)).toBe(403);
    expect(await status(`10.${octet === 250 ? 249 : octet + 1}.3.4`)).toBe(200);
    const explained = await explain(`ip:10.${octet}.3.4`);
    expect(explained.block).toMatchObject({ target: `net:10.${octet}.0.0/16`, active: true });
  });

  it("refuses a blocked key before any lookup, and every key of a blocked tenant", async () => {
    const tenant = unique("blocked");
    await createTenant(CONFIG, tenant);
    const first = await mintKey(CONFIG, tenant, { name: "one" });
    const second = await mintKey(CONFIG, tenant, { name: "two" });
    const status = async (key: string) => (await callGateway(gatewayRequest("/x", { ip: uniqueIp(), headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG })).status;
    expect(await status(first.key)).toBe(200);
    await block(`key:${first.id}`);
    expect(await status(first.key)).toBe(403);
    expect(await status(second.key)).toBe(200);
    await block(`tenant:${tenant}`);
    expect(await status(second.key)).toBe(403);
  });

  it("refuses a blocked key id 403 blocked before any lookup: its own secret or a wrong one, and no D1 query", async () => {
    const tenant = unique("nolookup");
    await createTenant(CONFIG, tenant);
    // Never used: no cache of this isolate knows it, so admitting or refusing it on its merits would need D1.
    const minted = await mintKey(CONFIG, tenant);
    await block(`key:${minted.id}`);
    // The block write made the policy due for reload: load it now, with the real D1.
    expect((await callGateway(gatewayRequest("/warm", { ip: uniqueIp() }), { TOLLGATE: CONFIG })).status).toBe(200);
    const wrongSecret = `${minted.prefix}${"z".repeat(minted.key.length - minted.prefix.length)}`;
    expect(wrongSecret).not.toBe(minted.key);
    for (const key of [wrongSecret, minted.key]) {
      const { db, counts } = countingDb();
      const res = await callGateway(gatewayRequest("/x", { ip: uniqueIp(), headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG, DB: db });
      expect(res.status).toBe(403);
      expect((await problemOf(res)).code).toBe("blocked");
      expect(counts).toEqual({ prepare: 0, batch: 0, exec: 0 });
    }
  });

  it("lets a block lapse at its expiry", async () => {
    const ip = uniqueIp();
    const expiresAtMs = Date.now() + 3_600_000;
    await block(`ip:${ip}`, { expires_at: new Date(expiresAtMs).toISOString() });
    const gateway = clockedGateway(CONFIG, {}, expiresAtMs - 1);
    expect((await gateway.call(gatewayRequest("/x", { ip }))).status).toBe(403);
    gateway.clock.nowMs += 1;
    expect((await gateway.call(gatewayRequest("/x", { ip }))).status).toBe(200);
  });

  it("refuses a malformed target naming the field, and the auditor may list but not block", async () => {
    const bad = await adminCall("POST", "/blocks", CONFIG, { body: { target: "net:10.0.0.0/99" } });
    expect(bad.status).toBe(400);
    expect(await problemOf(bad)).toMatchObject({ code: "invalid_request", field: "target" });
    expect((await adminCall("GET", "/blocks", CONFIG, { token: AUDITOR_TOKEN })).status).toBe(200);
    expect((await adminCall("POST", "/blocks", CONFIG, { token: AUDITOR_TOKEN, body: { target: `ip:${uniqueIp()}` } })).status).toBe(403);
  });

  it("refuses countries in blocked_countries", async () => {
    const config = { ...CONFIG, blocked_countries: ["KP"] };
    const from = (country: string) => new Request("http://gateway.test/x", { headers: { "cf-connecting-ip": uniqueIp() }, cf: { country } } as RequestInit);
    const refused = await callGateway(from("KP"), { TOLLGATE: config });
    expect(refused.status).toBe(403);
    expect((await problemOf(refused)).code).toBe("blocked");
    expect((await callGateway(from("DE"), { TOLLGATE: config })).status).toBe(200);
  });
});

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callGateway, clockedGateway, gatewayRequest, problemOf, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, failingDb, jsonOf, keyedCall, mintKey, testConfig } from "./admin-helpers";

// A short TTL, so entries go stale within the test (on a clock it holds) and
// the outage path is the one that answers; stale_if_error keeps them usable for 300 s.
const TTL_MS = 200;
const CONFIG = testConfig({ cache_ttl_s: TTL_MS / 1000, stale_if_error_s: 300 });

describe("when D1 fails", () => {
  it("keeps admitting cached keys with their cached limits, and answers keys it cannot look up 503 auth_unavailable", async () => {
    const tenant = unique("outage");
    await createTenant(CONFIG, tenant, { limits: { request: { key: [{ count: 50, window_s: 1 }] } } });
    const minted = await mintKey(CONFIG, tenant);
    // A second key, never used: not in any cache when D1 goes down.
    const unseen = await mintKey(CONFIG, tenant, { name: "unseen" });
    const gw = clockedGateway(CONFIG);
    const call = (key: string, options: { tag?: string; ip?: string; db?: D1Database } = {}) => {
      const headers: Record<string, string> = { authorization: `Bearer ${key}` };
      if (options.tag !== undefined) headers["x-test-tag"] = options.tag;
      return gw.call(gatewayRequest("/x", { headers, ip: options.ip ?? "198.51.100.7" }), options.db === undefined ? {} : { env: { DB: options.db } });
    };
    expect((await call(minted.key)).status).toBe(200);
    gw.clock.nowMs += TTL_MS + 50;

    const down = failingDb();
    const tag = unique("stale");
    const admitted = await call(minted.key, { db: down, tag });
    expect(admitted.status).toBe(200);
    expect(((await admitted.json()) as { headers: Record<string, string> }).headers["x-tollgate-tenant"]).toBe(tenant);

    const unknown = await call(unseen.key, { db: down, ip: uniqueIp() });
    expect(unknown.status).toBe(503);
    const body = await problemOf(unknown);
    expect(body.code).toBe("auth_unavailable");
    expect(JSON.stringify(body)).not.toMatch(/D1|simulated|select/i);

    // A made-up key needs no lookup to refuse: 401 even while D1 is down.
    const madeUp = await call(`tg_${"c".repeat(12)}_${"d".repeat(32)}`, { db: down, ip: uniqueIp() });
    expect(madeUp.status).toBe(401);
  });

  it('admits anonymous callers with the configured defaults when the override snapshot never loaded and policy_on_error is "open"', async () => {
    const ip = uniqueIp();
    // An override for this address exists in D1, but D1 is down: the configured default (2 per hour) applies.
    await jsonOf(await adminCall("PUT", `/overrides/ip:${ip}`, CONFIG, { body: { limits: { request: [{ count: 50, window_s: 3600 }] } } }), 201);
    const defaults = { ...CONFIG, policy_on_error: "open", categories: { ...(CONFIG.categories as object), request: { limits: { ip: [{ count: 2, window_s: 3600 }] } } } };
    const call = () => callGateway(gatewayRequest("/anon", { ip }), { TOLLGATE: defaults, DB: failingDb() });
    const first = await call();
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe('"request-ip-3600s";q=2;w=3600');
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(429);
  });

  it("refuses admin writes with 503 admin_unavailable and leaves nothing half-written", async () => {
    const tenant = unique("frozen");
    await createTenant(CONFIG, tenant, { limits: { request: { key: [{ count: 7, window_s: 1 }] } } });
    const minted = await mintKey(CONFIG, tenant);
    const auditBefore = await env.DB.prepare("select count(*) as n from audit_events").first<{ n: number }>();
    const down = { DB: failingDb() };

    const writes: [string, string, unknown][] = [
      ["PUT", `/tenants/${tenant}`, { limits: { request: { key: [{ count: 1, window_s: 1 }] } } }],
      ["PUT", `/tenants/${tenant}/limits`, { quota: { bytes: { hard: 1 } } }],
      ["PUT", `/tenants/${unique("new")}`, {}],
      ["POST", `/tenants/${tenant}/keys`, { name: "during outage" }],
      ["DELETE", `/keys/${minted.id}`, undefined],
      ["PUT", `/overrides/key:${minted.id}`, { limits: { request: [] } }],
      ["DELETE", `/tenants/${tenant}`, undefined],
    ];
    for (const [method, path, body] of writes) {
      const refused = await adminCall(method, path, CONFIG, { body, env: down });
      expect(refused.status, `${method} ${path}`).toBe(503);
      const problem = await problemOf(refused);
      expect(problem.code).toBe("admin_unavailable");
      expect(refused.headers.get("retry-after")).toBe("1");
    }

    const stored = await jsonOf<{ limits: unknown; quota: unknown }>(await adminCall("GET", `/tenants/${tenant}`, CONFIG), 200);
    expect(stored.limits).toEqual({ request: { key: [{ count: 7, window_s: 1 }] } });
    expect(stored.quota).toEqual({});
    const { keys } = await jsonOf<{ keys: { revoked_at: string | null }[] }>(await adminCall("GET", `/tenants/${tenant}/keys`, CONFIG), 200);
    expect(keys).toHaveLength(1);
    expect(keys[0]?.revoked_at).toBeNull();
    const auditAfter = await env.DB.prepare("select count(*) as n from audit_events").first<{ n: number }>();
    expect(auditAfter?.n).toBe(auditBefore?.n);
    expect((await keyedCall(minted.key, "/x", CONFIG)).status).toBe(200);
  });

  it("refuses admin reads with 503 admin_unavailable too", async () => {
    const refused = await adminCall("GET", `/audit`, CONFIG, { env: { DB: failingDb() } });
    expect(refused.status).toBe(503);
    expect((await problemOf(refused)).code).toBe("admin_unavailable");
  });
});

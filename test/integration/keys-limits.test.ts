import { describe, expect, it } from "vitest";
import { callGateway, gatewayRequest, problemOf, unique, uniqueIp } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

// Keys and tenants are subjects of the same limiter as addresses:
// which limits apply, and how key and tenant are charged together.
const CONFIG = testConfig({ categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { key: [{ count: 100, window_s: 60 }] } } } });

function call(key: string): Promise<Response> {
  return callGateway(gatewayRequest("/limited", { ip: "198.51.100.90", headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG });
}

async function admittedOf(key: string, tries: number): Promise<number> {
  let admitted = 0;
  for (let i = 0; i < tries; i++) {
    const res = await call(key);
    if (res.status === 200) admitted++;
    else expect(res.status).toBe(429);
    await res.arrayBuffer();
  }
  return admitted;
}

const per60 = (count: number) => [{ count, window_s: 60 }];

describe("limits of keys and tenants", () => {
  it("applies the tenant's limits for its keys over the configured default", async () => {
    const tenant = unique("prec");
    await createTenant(CONFIG, tenant, { limits: { request: { key: per60(3) } } });
    const { key } = await mintKey(CONFIG, tenant);
    expect(await admittedOf(key, 6)).toBe(3);
  });

  it("applies a key's own limits over its tenant's", async () => {
    const tenant = unique("own");
    await createTenant(CONFIG, tenant, { limits: { request: { key: per60(3) } } });
    const { key } = await mintKey(CONFIG, tenant, { name: "own", limits: { request: per60(2) } });
    expect(await admittedOf(key, 6)).toBe(2);
  });

  it("applies the configured default when neither key nor tenant sets one", async () => {
    const tenant = unique("default");
    await createTenant(CONFIG, tenant);
    const { key } = await mintKey(CONFIG, tenant);
    const first = await call(key);
    expect(first.headers.get("ratelimit-policy")).toBe('"request-key-60s";q=100;w=60, "request-tenant-1s";q=2000;w=1;tollgate-burst=4000');
  });

  it("applies an override for the caller at once on this isolate, over everything else", async () => {
    const tenant = unique("override");
    await createTenant(CONFIG, tenant, { limits: { request: { key: per60(3) } } });
    const { key, id } = await mintKey(CONFIG, tenant, { name: "over", limits: { request: per60(3) } });
    expect(await admittedOf(key, 4)).toBe(3);
    await jsonOf(await adminCall("PUT", `/overrides/key:${id}`, CONFIG, { body: { limits: { request: per60(10) } } }), 201);
    // The override is a different limit, so it starts from its own state: 10 more.
    expect(await admittedOf(key, 12)).toBe(10);
    expect(await jsonOf(await adminCall("DELETE", `/overrides/key:${id}`, CONFIG), 200)).toEqual({ caller_key: `key:${id}`, deleted: true });
    // Back under the key's own 3 per 60 s, which is still spent.
    expect(await admittedOf(key, 2)).toBe(0);
  });

  it("applies an override for an address to anonymous callers from it", async () => {
    const ip = uniqueIp();
    const anon = { TOLLGATE: { ...CONFIG, categories: { request: { limits: { ip: per60(1) } } } } };
    expect((await callGateway(gatewayRequest("/a", { ip }), anon)).status).toBe(200);
    expect((await callGateway(gatewayRequest("/a", { ip }), anon)).status).toBe(429);
    await jsonOf(await adminCall("PUT", `/overrides/ip:${ip}`, CONFIG, { body: { limits: { request: per60(5) } } }), 201);
    expect((await callGateway(gatewayRequest("/a", { ip }), anon)).status).toBe(200);
  });

  it("charges the tenant only for what its key admits (all or nothing)", async () => {
    // Tenant: 30 per 60 s in all; keys: 5 per 60 s each by default.
    const tenant = unique("allornothing");
    await createTenant(CONFIG, tenant, { limits: { request: { key: per60(5), tenant: per60(30) } } });
    const first = await mintKey(CONFIG, tenant, { name: "first" });
    const second = await mintKey(CONFIG, tenant, { name: "second", limits: { request: per60(1000) } });
    // The first key's 25 tries: 5 admitted, 20 refused by the key's own limit, charging the tenant nothing.
    expect(await admittedOf(first.key, 25)).toBe(5);
    // 25 of the tenant's 30 units remain for the second key.
    expect(await admittedOf(second.key, 30)).toBe(25);
    const refused = await call(second.key);
    expect(refused.status).toBe(429);
    const body = await problemOf(refused);
    expect(body.category).toBe("request");
    // Every policy the request is charged under; the one it did not fit named in the body.
    expect(refused.headers.get("ratelimit-policy")).toBe('"request-key-60s";q=1000;w=60, "request-tenant-60s";q=30;w=60');
    expect(body["violated-policies"]).toEqual(["request-tenant-60s"]);
  });

  it("never shares buckets between tenants", async () => {
    const a = unique("apart");
    const b = unique("apart");
    await createTenant(CONFIG, a, { limits: { request: { tenant: per60(2) } } });
    await createTenant(CONFIG, b, { limits: { request: { tenant: per60(2) } } });
    const ka = await mintKey(CONFIG, a);
    const kb = await mintKey(CONFIG, b);
    expect(await admittedOf(ka.key, 4)).toBe(2);
    expect(await admittedOf(kb.key, 4)).toBe(2);
  });

  it("never shares buckets between keys of one tenant", async () => {
    const tenant = unique("keys");
    await createTenant(CONFIG, tenant, { limits: { request: { key: per60(2) } } });
    const k1 = await mintKey(CONFIG, tenant, { name: "one" });
    const k2 = await mintKey(CONFIG, tenant, { name: "two" });
    expect(await admittedOf(k1.key, 3)).toBe(2);
    expect(await admittedOf(k2.key, 3)).toBe(2);
  });
});

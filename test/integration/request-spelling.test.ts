// Issue 23 items 1 and 6 from outside: a route cannot be dodged by escaping a
// letter, the origin gets the path the gateway matched, method-override
// headers do not reach the origin unless configured, and a request carrying
// two different credentials is refused before anything is charged or
// forwarded. Through the Worker, against the recording origin and the real
// quota object.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callGateway, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";
import { countingDb, createTenant, mintKey, testConfig, tenantWithKey as newTenantWithKey } from "./admin-helpers";

const ROUTES = [
  { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
  { method: "DELETE", path: "/objects/:object", quota: "release" },
  { method: "POST", path: "/v1/chat/completions", response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 500 } },
];
const CONFIG = testConfig({ routes: ROUTES, categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, tokens: { limits: { ip: [{ count: 500, window_s: 3600 }] } } } });

function usageOf(tenant: string) {
  return env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant)).usage();
}

const tenantWithKey = (body: Record<string, unknown>) => newTenantWithKey(CONFIG, body, "spell");

describe("escaped unreserved characters (item 1)", () => {
  it("gives PUT /%6Fbjects/x the store route: 411, the quota, the upload charge, and the decoded path at the origin", async () => {
    const { tenant, key } = await tenantWithKey({ quota: { bytes: { hard: 1000 } }, limits: { upload: { key: [{ count: 4, window_s: 3600 }] } } });
    const ip = uniqueIp();
    const put = (path: string, bytes: number | null, tag = unique("esc")) => {
      const headers: Record<string, string> = { authorization: `Bearer ${key}`, "x-test-tag": tag };
      const init: RequestInit & { ip: string } = { method: "PUT", ip, headers };
      if (bytes !== null) {
        headers["content-length"] = String(bytes);
        init.body = new Uint8Array(bytes);
      } else init.body = new ReadableStream({ start: (c) => (c.enqueue(new Uint8Array(10)), c.close()) });
      return callGateway(gatewayRequest(path, init), { TOLLGATE: CONFIG }, { settle: true });
    };
    expect((await problemOf(await put("/%6Fbjects/x", null))).code).toBe("length_required");
    const over = unique("over");
    expect((await problemOf(await put("/%6Fbjects/x", 5000, over))).code).toBe("quota_exceeded");
    expect(await originLog(over)).toHaveLength(0);
    const stored = unique("stored");
    expect((await put("/%6F%62jects/%78", 600, stored)).status).toBe(200);
    expect((await originLog(stored))[0]!.path).toBe("/objects/x");
    expect(await usageOf(tenant)).toMatchObject({ bytes: 600, objects: 1 });
    // Four uploads per hour (the 411 and the 403 were charged too, as on the plain spelling): the escaped spellings were charged like the plain one.
    expect((await put("/obj%65cts/y", 10)).status).toBe(200);
    expect((await problemOf(await put("/objects/z", 10))).code).toBe("rate_limited");
  });

  it("gives POST /v1/chat/c%6Fmpletions the token reserve", async () => {
    const ip = uniqueIp();
    const post = (path: string, tag: string) => callGateway(gatewayRequest(path, { method: "POST", ip, headers: { "x-test-tag": tag } }), { TOLLGATE: CONFIG }, { settle: true });
    const first = unique("chat");
    expect((await post("/v1/chat/c%6Fmpletions", first)).status).toBe(200);
    expect((await originLog(first))[0]!.path).toBe("/v1/chat/completions");
    // The reserve (500 of 500 per hour) stands: no cost came back.
    const second = unique("chat");
    expect(await problemOf(await post("/v1/%63hat/completions", second))).toMatchObject({ code: "rate_limited", category: "tokens" });
    expect(await originLog(second)).toHaveLength(0);
  });

  it("forwards unreserved escapes decoded and others with upper-case hex", async () => {
    const tag = unique("spelled");
    const res = await callGateway(gatewayRequest("/%7Euser/%41b%2dc%5F%2E%30/a%c3%a9%3f?q=%6F", { ip: uniqueIp(), headers: { "x-test-tag": tag } }), { TOLLGATE: CONFIG }, { settle: true });
    expect(res.status).toBe(200);
    const seen = (await originLog(tag))[0]!;
    expect(seen.path).toBe("/~user/Ab-c_.0/a%C3%A9%3F");
    // The query is passed as sent.
    expect(seen.query).toBe("?q=%6F");
  });

  it("forwards the decoded path to the zone's own origin when ORIGIN_URL is empty", async () => {
    const tag = unique("zone");
    const res = await callGateway(new Request(`${env.ORIGIN_URL}//%6Fbjects%2dlist//x?z=1`, { headers: { "x-test-tag": tag, "cf-connecting-ip": uniqueIp() } }), { TOLLGATE: CONFIG, ORIGIN_URL: "" }, { settle: true });
    expect(res.status).toBe(200);
    const seen = (await originLog(tag))[0]!;
    expect(seen.path).toBe("/objects-list/x");
    expect(seen.query).toBe("?z=1");
  });
});

describe("method-override headers (item 1)", () => {
  const OVERRIDES = { "x-http-method-override": "PUT", "x-http-method": "DELETE", "x-method-override": "PATCH" };

  it("drops X-HTTP-Method-Override, X-HTTP-Method and X-Method-Override before forwarding", async () => {
    const tag = unique("override");
    const res = await callGateway(gatewayRequest("/objects/x", { method: "POST", ip: uniqueIp(), headers: { ...OVERRIDES, "x-test-tag": tag } }), { TOLLGATE: CONFIG }, { settle: true });
    expect(res.status).toBe(200);
    const seen = (await originLog(tag))[0]!;
    for (const name of Object.keys(OVERRIDES)) expect(seen.headers[name], name).toBeUndefined();
  });

  it("passes them on with forward_method_override: true", async () => {
    const tag = unique("override-kept");
    const res = await callGateway(gatewayRequest("/things", { method: "POST", ip: uniqueIp(), headers: { ...OVERRIDES, "x-test-tag": tag } }), { TOLLGATE: { ...CONFIG, forward_method_override: true } }, { settle: true });
    expect(res.status).toBe(200);
    expect((await originLog(tag))[0]!.headers).toMatchObject(OVERRIDES);
  });
});

describe("two credentials on one request (item 6)", () => {
  const LIMITED = testConfig({
    categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { key: [{ count: 1, window_s: 3600 }] } } },
    auth_failures: [{ count: 1, window_s: 3600 }],
    // The policy snapshot, loaded once below, stays fresh for the whole test.
    cache_ttl_s: 3600,
  });

  it("refuses Bearer A with X-Api-Key B: 400 ambiguous_credential, no lookup, nothing charged, nothing forwarded", async () => {
    const tenant = unique("two");
    await createTenant(LIMITED, tenant);
    const a = (await mintKey(LIMITED, tenant)).key;
    const b = (await mintKey(LIMITED, tenant)).key;
    const ip = uniqueIp();
    // Loads the policy snapshot (blocks, overrides), so that what is counted below is the requests' own queries.
    expect((await callGateway(gatewayRequest("/things", { ip: uniqueIp() }), { TOLLGATE: LIMITED }, { settle: true })).status).toBe(200);
    const { db, counts } = countingDb();
    for (const [authorization, apiKey] of [[`Bearer ${a}`, b], [`Bearer ${b}`, a], [`Bearer ${a}`, "something-else"]] as const) {
      const tag = unique("ambiguous");
      const res = await callGateway(gatewayRequest("/things", { ip, headers: { authorization, "x-api-key": apiKey, "x-test-tag": tag } }), { TOLLGATE: LIMITED, DB: db }, { settle: true });
      expect(res.status).toBe(400);
      expect(await problemOf(res)).toMatchObject({ code: "ambiguous_credential" });
      expect(await originLog(tag)).toHaveLength(0);
    }
    expect(counts.prepare + counts.batch + counts.exec).toBe(0);
    // Neither key's one request per hour was spent, and the address's one auth failure is still there.
    for (const key of [a, b]) expect((await callGateway(gatewayRequest("/things", { ip, headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: LIMITED }, { settle: true })).status).toBe(200);
    expect((await problemOf(await callGateway(gatewayRequest("/things", { ip, headers: { "x-api-key": "not-a-key" } }), { TOLLGATE: LIMITED }, { settle: true }))).code).toBe("invalid_credential");
  });

  it("takes the same key in both headers as one credential, and Basic auth beside a key as the origin's", async () => {
    const tenant = unique("same");
    await createTenant(LIMITED, tenant);
    const key = (await mintKey(LIMITED, tenant)).key;
    const other = (await mintKey(LIMITED, tenant)).key;
    const tag = unique("same");
    const res = await callGateway(gatewayRequest("/things", { ip: uniqueIp(), headers: { authorization: `Bearer ${key}`, "x-api-key": ` ${key} `, "x-test-tag": tag } }), { TOLLGATE: LIMITED }, { settle: true });
    expect(res.status).toBe(200);
    expect((await originLog(tag))[0]!.headers["x-tollgate-tenant"]).toBe(tenant);
    const basic = unique("basic");
    const withBasic = await callGateway(gatewayRequest("/things", { ip: uniqueIp(), headers: { authorization: "Basic b3JpZ2luOnNlY3JldA==", "x-api-key": other, "x-test-tag": basic } }), { TOLLGATE: LIMITED }, { settle: true });
    expect(withBasic.status).toBe(200);
    expect((await originLog(basic))[0]!.headers).toMatchObject({ authorization: "Basic b3JpZ2luOnNlY3JldA==", "x-tollgate-tenant": tenant });
  });

  it("records the refusal in shadow mode and forwards as anonymous", async () => {
    const tenant = unique("shadow-two");
    const shadow = { ...LIMITED, mode: "shadow" };
    await createTenant(shadow, tenant);
    const a = (await mintKey(shadow, tenant)).key;
    const tag = unique("shadow-two");
    const res = await callGateway(gatewayRequest("/things", { ip: uniqueIp(), headers: { authorization: `Bearer ${a}`, "x-api-key": "other", "x-test-tag": tag } }), { TOLLGATE: shadow }, { settle: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("tollgate-shadow")).toBe("ambiguous_credential");
    expect((await originLog(tag))[0]!.headers["x-tollgate-tenant"]).toBeUndefined();
  });
});

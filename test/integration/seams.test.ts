// Where two features meet, a client must not get through: path parameters
// and routes, HEAD and a GET route's charges, `_method` and the method
// override rule, a zero reserve and budgets, a spent budget and its object,
// shadow mode and priced settlement, a budget refusal and its headers. Each
// test here failed on the gateway before its seam was closed. (Status
// charges under concurrency: charge-on-status.test.ts.)
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { clockedGateway, gatewayRequest, originLog, problemOf, unique, uniqueIp } from "../helpers";
import { adminCall, countingQuota, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const HUGE = [{ count: 1_000_000, window_s: 1 }];

async function keyedTenant(config: Record<string, unknown>, body: Record<string, unknown> = {}): Promise<{ tenant: string; key: string; id: string }> {
  const tenant = unique("seam");
  await createTenant(config, tenant, body);
  const minted = await mintKey(config, tenant);
  return { tenant, key: minted.key, id: minted.id };
}

async function usageOf(config: Record<string, unknown>, tenant: string): Promise<{ bytes: number; objects: number }> {
  return jsonOf(await adminCall("GET", `/tenants/${tenant}/usage`, config), 200);
}

async function budgetOf(config: Record<string, unknown>, path: string, category: string): Promise<{ used: number; amount: number }> {
  return jsonOf(await adminCall("GET", `${path}/budgets/${category}`, config), 200);
}

async function setBudget(config: Record<string, unknown>, path: string, category: string, body: Record<string, unknown>): Promise<void> {
  const res = await adminCall("PUT", `${path}/budgets/${category}`, config, { body });
  expect([200, 201]).toContain(res.status);
}

function keyed(key: string, path: string, init: { method?: string; tag?: string; headers?: Record<string, string>; body?: BodyInit; ip?: string } = {}): Request {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, ...(init.tag === undefined ? {} : { "x-test-tag": init.tag }), ...init.headers };
  return gatewayRequest(path, { method: init.method ?? "GET", ip: init.ip ?? "198.51.100.120", headers, ...(init.body === undefined ? {} : { body: init.body }) });
}

describe("path parameters (a `;` in a segment)", () => {
  const CONFIG = testConfig({
    categories: { admin: { limits: { admin: HUGE } }, login_failure: { limits: { ip: [{ count: 1, window_s: 900 }] } } },
    routes: [
      { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
      { method: "POST", path: "/login", charges: { login_failure: 1 }, charge_on_status: ["4xx"] },
    ],
  });
  const ALLOWED = { ...CONFIG, allow_path_parameters: true };

  it("refuses PUT /objects;jsessionid=1/y1 with 400 invalid_path: nothing forwarded, nothing stored uncounted", async () => {
    const { tenant, key } = await keyedTenant(CONFIG);
    const tag = unique("jsession");
    const gateway = clockedGateway(CONFIG);
    const res = await gateway.call(keyed(key, "/objects;jsessionid=1/y1", { method: "PUT", tag, body: "twelve bytes", headers: { "content-length": "12" } }), { settle: true });
    expect(res.status).toBe(400);
    const problem = await problemOf(res);
    expect(problem).toMatchObject({ code: "invalid_path" });
    expect(problem.detail).toContain(";");
    const login = await gateway.call(gatewayRequest("/login;x=1", { method: "POST", ip: uniqueIp(), body: "u=a", headers: { "x-test-tag": tag, "x-origin-status": "401" } }), { settle: true });
    expect(login.status).toBe(400);
    expect(await originLog(tag)).toHaveLength(0);
    expect(await usageOf(CONFIG, tenant)).toMatchObject({ objects: 0, bytes: 0 });
  });

  it("with allow_path_parameters, matches routes without each segment's `;…` and forwards the path as sent", async () => {
    const { tenant, key } = await keyedTenant(ALLOWED);
    const tag = unique("allowed");
    const gateway = clockedGateway(ALLOWED);
    const res = await gateway.call(keyed(key, "/objects;jsessionid=1/y1;v=2", { method: "PUT", tag, body: "twelve bytes", headers: { "content-length": "12" } }), { settle: true });
    expect(res.status).toBe(200);
    const seen = await originLog(tag);
    expect(seen.map((s) => s.path)).toEqual(["/objects;jsessionid=1/y1;v=2"]);
    // Counted as the object a servlet container stores: y1.
    expect(await usageOf(ALLOWED, tenant)).toMatchObject({ objects: 1, bytes: 12 });
    // /login;x=1 is /login: its failure is charged, so the next is refused before the call.
    const ip = uniqueIp();
    expect((await gateway.call(gatewayRequest("/login;x=1", { method: "POST", ip, body: "u=a", headers: { "x-test-tag": tag, "x-origin-status": "401" } }), { settle: true })).status).toBe(401);
    const refused = await gateway.call(gatewayRequest("/LOGIN;jsessionid=2", { method: "POST", ip, body: "u=a", headers: { "x-test-tag": tag, "x-origin-status": "401" } }), { settle: true });
    expect(await problemOf(refused)).toMatchObject({ code: "rate_limited", category: "login_failure" });
  });
});

describe("HEAD on a GET route", () => {
  const CONFIG = testConfig({
    categories: { admin: { limits: { admin: HUGE } }, reports: { limits: { key: [{ count: 2, window_s: 3600 }] } } },
    routes: [{ method: "GET", path: "/expensive", charges: { reports: 1 } }],
  });

  it("pays the route's charges and budgets as the GET would", async () => {
    const { key, id } = await keyedTenant(CONFIG);
    await setBudget(CONFIG, `/keys/${id}`, "reports", { amount: 10, period: "month" });
    const gateway = clockedGateway(CONFIG);
    const head = await gateway.call(keyed(key, "/expensive", { method: "HEAD" }), { settle: true });
    expect(head.status).toBe(200);
    expect(head.headers.get("ratelimit-policy")).toContain('"reports-key-3600s"');
    expect((await gateway.call(keyed(key, "/expensive", { method: "HEAD" }), { settle: true })).status).toBe(200);
    // Two HEADs spent the two reports of the hour: the GET is refused.
    const get = await gateway.call(keyed(key, "/expensive"), { settle: true });
    expect(await problemOf(get)).toMatchObject({ code: "rate_limited", category: "reports" });
    // Once the gateway's lease of the budget ends, the budget holds exactly what the two HEADs spent.
    await gateway.runtime.budgetLeases.closeAll({ tenant: env.TENANT_QUOTA, org: env.ORG_QUOTA }, null, gateway.clock.nowMs, () => {});
    expect(await budgetOf(CONFIG, `/keys/${id}`, "reports")).toMatchObject({ used: 2 });
  });
});

describe("a `_method` query parameter", () => {
  const CONFIG = testConfig({ categories: { admin: { limits: { admin: HUGE } } } });

  it("is dropped before forwarding, in any spelling, unless forward_method_override", async () => {
    const tag = unique("method");
    const gateway = clockedGateway(CONFIG);
    const ip = uniqueIp();
    for (const query of ["?_method=DELETE&a=1", "?a=1&%5Fmethod=PUT", "?a=1&_method=PATCH&_method=DELETE"]) {
      expect((await gateway.call(gatewayRequest(`/things${query}`, { method: "POST", ip, body: "x", headers: { "x-test-tag": tag } }), { settle: true })).status).toBe(200);
    }
    expect((await gateway.call(gatewayRequest("/things?_method=DELETE", { method: "POST", ip, body: "x", headers: { "x-test-tag": tag } }), { settle: true })).status).toBe(200);
    // Other parameters, and names that only look alike, pass untouched.
    expect((await gateway.call(gatewayRequest("/things?__method=x&method=y&_methods=z", { method: "POST", ip, body: "x", headers: { "x-test-tag": tag } }), { settle: true })).status).toBe(200);
    const seen = await originLog(tag);
    expect(seen.map((s) => s.query)).toEqual(["?a=1", "?a=1", "?a=1", "", "?__method=x&method=y&_methods=z"]);

    const passing = clockedGateway({ ...CONFIG, forward_method_override: true });
    const kept = unique("method-kept");
    await passing.call(gatewayRequest("/things?_method=DELETE&a=1", { method: "POST", ip, body: "x", headers: { "x-test-tag": kept } }), { settle: true });
    expect((await originLog(kept)).map((s) => s.query)).toEqual(["?_method=DELETE&a=1"]);
  });
});

describe("a response-priced route with a reserve of 0", () => {
  const CONFIG = testConfig({
    categories: { admin: { limits: { admin: HUGE } } },
    routes: [{ method: "POST", path: "/v1/cheap", response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 0 } }],
  });

  it("still spends the budget: the cost settles as debt, and a spent budget refuses the next call", async () => {
    const { key, id } = await keyedTenant(CONFIG);
    await setBudget(CONFIG, `/keys/${id}`, "tokens", { amount: 100, period: "month" });
    const gateway = clockedGateway(CONFIG);
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await gateway.call(keyed(key, "/v1/cheap", { method: "POST", body: "{}", headers: { "x-origin-usage-header": "1000" } }), { settle: true });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([200, 429, 429, 429, 429]);
    expect(await budgetOf(CONFIG, `/keys/${id}`, "tokens")).toMatchObject({ used: 1000 });
  });
});

describe("a spent budget does not flood its object", () => {
  const CONFIG = testConfig({ categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: HUGE, tenant: HUGE } } } });

  it("makes at most 2 object calls for 100 requests of a spent key in 5 s, and a top-up applies within budgets.exhausted_cache_s", async () => {
    const { key, tenant } = await keyedTenant(CONFIG);
    await setBudget(CONFIG, `/tenants/${tenant}`, "request", { amount: 1, period: "none" });
    const counting = countingQuota();
    const start = Date.now();
    const gateway = clockedGateway(CONFIG, { TENANT_QUOTA: counting.ns }, start);
    expect((await gateway.call(keyed(key, "/things"), { settle: true })).status).toBe(200);
    counting.calls.length = 0;
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) {
      gateway.clock.nowMs = start + i * 49; // 100 requests over 4.9 s
      statuses.push((await gateway.call(keyed(key, "/things"), { settle: true })).status);
    }
    expect(statuses.every((s) => s === 402)).toBe(true);
    expect(counting.calls.length).toBeLessThanOrEqual(2);
    // A top-up through another isolate (the admin API's) reaches this one once its memory of the refusal ends.
    await jsonOf(await adminCall("POST", `/tenants/${tenant}/budgets/request/topups`, CONFIG, { body: { amount: 5, reason: "seams" } }), 201);
    gateway.clock.nowMs = start + 4_900 + 5_000;
    expect((await gateway.call(keyed(key, "/things"), { settle: true })).status).toBe(200);
  });

  it("answers a remembered budget refusal exactly as the object did, with no object call", async () => {
    const { key, id } = await keyedTenant(CONFIG);
    await setBudget(CONFIG, `/keys/${id}`, "request", { amount: 3, period: "day" });
    const counting = countingQuota();
    const gateway = clockedGateway(CONFIG, { TENANT_QUOTA: counting.ns }, Date.parse("2027-06-10T12:00:00.000Z"));
    for (let i = 0; i < 3; i++) expect((await gateway.call(keyed(key, "/things"), { settle: true })).status).toBe(200);
    const first = await gateway.call(keyed(key, "/things"), { settle: true });
    const calls = counting.calls.length;
    const second = await gateway.call(keyed(key, "/things"), { settle: true });
    expect(counting.calls.length).toBe(calls);
    // The remembered refusal answers exactly as the object's did.
    expect(second.status).toBe(429);
    expect(await problemOf(second)).toEqual(await problemOf(first));
    expect(second.headers.get("retry-after")).toBe(first.headers.get("retry-after"));
  });

  it("does not ask a failing object again for a second", async () => {
    const { key, tenant } = await keyedTenant(CONFIG);
    await setBudget(CONFIG, `/tenants/${tenant}`, "request", { amount: 100, period: "month" });
    let asked = 0;
    const broken = {
      idFromName: (name: string) => env.TENANT_QUOTA.idFromName(name),
      get: () => ({
        budgetLease: async () => {
          asked += 1;
          throw new Error("Durable Object is overloaded.");
        },
      }),
    } as unknown as DurableObjectNamespace;
    const start = Date.now();
    const gateway = clockedGateway(CONFIG, { TENANT_QUOTA: broken }, start);
    for (let i = 0; i < 20; i++) {
      gateway.clock.nowMs = start + i * 45;
      const res = await gateway.call(keyed(key, "/things"), { settle: true });
      expect((await problemOf(res)).code).toBe("budget_unavailable");
    }
    expect(asked).toBe(1);
    gateway.clock.nowMs = start + 1_000;
    await gateway.call(keyed(key, "/things"), { settle: true });
    expect(asked).toBe(2);
  });
});

describe("shadow mode and priced settlement", () => {
  const CONFIG = testConfig({
    mode: "shadow",
    categories: { admin: { limits: { admin: HUGE } }, tokens: { limits: { key: [{ count: 500, window_s: 60 }] } } },
    routes: [{ method: "POST", path: "/v1/chat", response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 20 } }],
  });

  it("settles the priced cost of every request, those the limits would have refused too: budget and units metering", async () => {
    const { key, id, tenant } = await keyedTenant(CONFIG);
    await setBudget(CONFIG, `/keys/${id}`, "tokens", { amount: 100_000, period: "month" });
    const gateway = clockedGateway(CONFIG);
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await gateway.call(keyed(key, "/v1/chat", { method: "POST", body: "{}", headers: { "x-origin-usage-header": "500" } }), { settle: true }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    // The first settled a debt of 480 on 500 per minute: the second's and third's reserves of 20 would have been refused.
    expect(answers.map((r) => r.headers.get("tollgate-shadow"))).toEqual([null, "rate_limited", "rate_limited"]);
    expect(await budgetOf(CONFIG, `/keys/${id}`, "tokens")).toMatchObject({ used: 1500 });
    await gateway.runtime.meter.flushNow(database(env.DB), gateway.clock.nowMs);
    const row = await env.DB.prepare("SELECT value FROM usage_monthly WHERE tenant = ? AND metric = 'units:tokens'").bind(tenant).first<{ value: number }>();
    expect(row?.value).toBe(1500);
  });
});

describe("a budget refusal's headers", () => {
  const CONFIG = testConfig({ categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: [{ count: 1000, window_s: 1, burst: 2000 }] } } } });

  it("describe the budget, with nothing left until it resets, not a rate limit with room", async () => {
    const { key, id } = await keyedTenant(CONFIG);
    await setBudget(CONFIG, `/keys/${id}`, "request", { amount: 1, period: "month" });
    // 2027-02-10: a 28-day month, 19 days (1,641,600 s) from its end.
    const gateway = clockedGateway(CONFIG, {}, Date.parse("2027-02-10T00:00:00.000Z"));
    expect((await gateway.call(keyed(key, "/things"), { settle: true })).status).toBe(200);
    const refused = await gateway.call(keyed(key, "/things"), { settle: true });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("ratelimit-policy")).toBe('"budget-request-key-month";q=1;w=2419200');
    expect(refused.headers.get("ratelimit")).toBe('"budget-request-key-month";r=0;t=1641600');
    expect(refused.headers.get("x-ratelimit-limit")).toBe("1");
    expect(refused.headers.get("x-ratelimit-remaining")).toBe("0");
    expect(refused.headers.get("x-ratelimit-reset")).toBe("1641600");
    expect(refused.headers.get("retry-after")).toBe("1641600");
  });

  it("leave out the window and reset for credits, which have neither", async () => {
    const { key, tenant } = await keyedTenant(CONFIG);
    await setBudget(CONFIG, `/tenants/${tenant}`, "request", { amount: 1, period: "none" });
    const gateway = clockedGateway({ ...CONFIG, rate_limit_headers: "draft-12" });
    expect((await gateway.call(keyed(key, "/things"), { settle: true })).status).toBe(200);
    const refused = await gateway.call(keyed(key, "/things"), { settle: true });
    expect(refused.status).toBe(402);
    expect(refused.headers.get("ratelimit-policy")).toBe('"budget-request-tenant-none";q=1');
    expect(refused.headers.get("ratelimit")).toBe('"budget-request-tenant-none";a=0;c=1');
    expect(refused.headers.get("x-ratelimit-reset")).toBeNull();
  });
});

describe("shadow mode's reservations", () => {
  const CONFIG = testConfig({
    mode: "shadow",
    categories: { admin: { limits: { admin: HUGE } } },
    routes: [{ method: "POST", path: "/v1/calls", response_charge: { category: "request", header: "x-usage-total-tokens", reserve: 2 } }],
  });

  it("settles a priced request category with the request's own unit: a call costing 0 leaves 1 spent", async () => {
    const { tenant, key } = await keyedTenant(CONFIG);
    await setBudget(CONFIG, `/tenants/${tenant}`, "request", { amount: 100, period: "month" });
    const gateway = clockedGateway(CONFIG);
    const res = await gateway.call(keyed(key, "/v1/calls", { method: "POST", body: "{}", headers: { "x-origin-usage-header": "0" } }), { settle: true });
    expect(res.status).toBe(200);
    // Reserved 1 + 2 at the object (shadow mode reserves each request); the answer's cost of 0 leaves the unit itself.
    expect(await budgetOf(CONFIG, `/tenants/${tenant}`, "request")).toMatchObject({ used: 1 });
  });
});

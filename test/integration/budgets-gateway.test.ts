// Budgets through the Worker: a request reserves from every budget of a
// category it spends (key, tenant, org) in the quota objects before it is
// forwarded. Exactness under concurrency (through SELF, and across four
// isolates' runtimes over the same objects), rollover on a clock the test
// holds, settlement of response-priced costs, credits, shadow mode, a quota
// object that fails, all or nothing with the rate limits, and the hot path's
// zero object calls when no budget applies.
import { SELF } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { callGateway, clockedGateway, eventually, gatewayRequest, originLog, problemOf, unique } from "../helpers";
import { jwksAddress, newKey, publishJwks, signToken, T0_MS } from "../identity/jwt-helpers";
import { adminCall, countingQuota, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const HUGE = [{ count: 1_000_000, window_s: 1 }];
const CONFIG = testConfig({
  categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: HUGE, tenant: HUGE } } },
  routes: [
    { method: "POST", path: "/v1/chat", response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 100 } },
    { method: "PUT", path: "/objects/:object", quota: "store" },
  ],
});
const SHADOW = { ...CONFIG, mode: "shadow" };

/** Instants on the test's clock, after the machine's: a budget written now starts its period before them. */
const at = (iso: string) => Date.parse(iso);

async function setBudget(path: string, category: string, body: Record<string, unknown>): Promise<void> {
  const res = await adminCall("PUT", `${path}/budgets/${category}`, CONFIG, { body });
  expect([200, 201]).toContain(res.status);
}

async function budgetOf(path: string, category: string): Promise<{ used: number; amount: number; remaining: number; leased: number }> {
  return jsonOf(await adminCall("GET", `${path}/budgets/${category}`, CONFIG), 200);
}

/**
 * What the budget's object knows is spent: `used` less the units isolates
 * hold in leases and have not reported spent (a lease's units count in
 * `used` from the moment it is granted).
 */
async function spentOf(path: string, category: string): Promise<number> {
  const b = await budgetOf(path, category);
  return b.used - b.leased;
}

/** Ends the gateway's leases (as its runtime being replaced does) and waits for their unspent units to reach the objects. */
async function closeLeases(gateway: ReturnType<typeof clockedGateway>): Promise<void> {
  await gateway.runtime.budgetLeases.closeAll({ tenant: env.TENANT_QUOTA, org: env.ORG_QUOTA }, null, gateway.clock.nowMs, () => {});
}

async function keyed(tenantBody: Record<string, unknown> = {}): Promise<{ tenant: string; key: string; id: string }> {
  const tenant = unique("budget");
  await createTenant(CONFIG, tenant, tenantBody);
  const minted = await mintKey(CONFIG, tenant);
  return { tenant, key: minted.key, id: minted.id };
}

function get(key: string, tag?: string, path = "/things"): Request {
  return gatewayRequest(path, { ip: "198.51.100.90", headers: { authorization: `Bearer ${key}`, ...(tag === undefined ? {} : { "x-test-tag": tag }) } });
}

function chat(key: string, cost?: number): Request {
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  if (cost !== undefined) headers["x-origin-usage-header"] = String(cost);
  return gatewayRequest("/v1/chat", { method: "POST", ip: "198.51.100.91", headers, body: "{}" });
}

describe("exactness", () => {
  it("admits exactly the amount out of 64 concurrent requests through SELF", async () => {
    const { key, id } = await keyed();
    await setBudget(`/keys/${id}`, "request", { amount: 20, period: "month" });
    const tag = unique("self");
    const startMs = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 64 }, () => SELF.fetch("http://gateway.test/things", { headers: { authorization: `Bearer ${key}`, "x-test-tag": tag, "cf-connecting-ip": "198.51.100.92" } })),
    );
    const endMs = Date.now();
    const bodies = await Promise.all(answers.map(async (r) => ({ status: r.status, retryAfter: r.headers.get("retry-after"), body: r.status === 200 ? null : ((await r.json()) as Record<string, unknown>) })));
    expect(bodies.filter((b) => b.status === 200)).toHaveLength(20);
    const refused = bodies.filter((b) => b.status !== 200);
    expect(refused).toHaveLength(44);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.body).toMatchObject({ code: "budget_exhausted", category: "request", budget: { owner: `key:${id}`, period: "month", amount: 20, used: 20 } });
      // The whole seconds to the month's reset, rounded up, from the instant it was refused.
      const resetsAtMs = Date.parse((r.body!.budget as { resets_at: string }).resets_at);
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(Math.ceil((resetsAtMs - endMs) / 1000));
      expect(Number(r.retryAfter)).toBeLessThanOrEqual(Math.ceil((resetsAtMs - startMs) / 1000));
    }
    expect(await originLog(tag)).toHaveLength(20);
    expect(await budgetOf(`/keys/${id}`, "request")).toMatchObject({ used: 20, remaining: 0 });
  });

  it("holds a budget exact across four isolates over the same objects", async () => {
    const { key, tenant } = await keyed();
    await setBudget(`/tenants/${tenant}`, "request", { amount: 20, period: "day" });
    const start = Date.now();
    const isolates = [0, 1, 2, 3].map(() => clockedGateway(CONFIG, {}, start));
    const answers = await Promise.all(isolates.flatMap((gateway) => Array.from({ length: 16 }, () => gateway.call(get(key), { settle: true }))));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(20);
    expect(answers.filter((r) => r.status === 429)).toHaveLength(44);
    expect(await budgetOf(`/tenants/${tenant}`, "request")).toMatchObject({ used: 20 });
  });
});

describe("periods on the gateway's clock", () => {
  it("refuses on the last second of the month with Retry-After to the 1st at 00:00 UTC, and admits again then", async () => {
    const { key, tenant } = await keyed();
    await setBudget(`/tenants/${tenant}`, "request", { amount: 2, period: "month" });
    const gateway = clockedGateway(CONFIG, {}, at("2027-03-31T23:59:58.500Z"));
    expect((await gateway.call(get(key), { settle: true })).status).toBe(200);
    expect((await gateway.call(get(key), { settle: true })).status).toBe(200);
    const refused = await gateway.call(get(key), { settle: true });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("2");
    expect(await problemOf(refused)).toMatchObject({ code: "budget_exhausted", category: "request", budget: { owner: `tenant:${tenant}`, period: "month", amount: 2, used: 2, resets_at: "2027-04-01T00:00:00.000Z" } });
    gateway.clock.nowMs = at("2027-03-31T23:59:59.999Z");
    expect((await gateway.call(get(key), { settle: true })).status).toBe(429);
    gateway.clock.nowMs = at("2027-04-01T00:00:00.000Z");
    expect((await gateway.call(get(key), { settle: true })).status).toBe(200);
  });

  it("starts a week budget again on Monday at 00:00 UTC", async () => {
    const { key, id } = await keyed();
    await setBudget(`/keys/${id}`, "request", { amount: 1, period: "week" });
    const gateway = clockedGateway(CONFIG, {}, at("2027-03-14T23:59:59.000Z"));
    expect((await gateway.call(get(key), { settle: true })).status).toBe(200);
    const refused = await gateway.call(get(key), { settle: true });
    expect(await problemOf(refused)).toMatchObject({ budget: { period: "week", resets_at: "2027-03-15T00:00:00.000Z" } });
    expect(refused.headers.get("retry-after")).toBe("1");
    gateway.clock.nowMs = at("2027-03-15T00:00:00.000Z");
    expect((await gateway.call(get(key), { settle: true })).status).toBe(200);
  });
});

describe("response-priced costs", () => {
  it("reserves the route's reserve, then refunds below it and charges debt above it", async () => {
    const { key, id } = await keyed();
    await setBudget(`/keys/${id}`, "tokens", { amount: 300, period: "month" });
    const gateway = clockedGateway(CONFIG);
    // Each request's units come from the gateway's lease of the budget, counted in `used` from the grant: a
    // refund goes back to the lease, and reaches `used` when the lease ends (closeLeases, as a replaced runtime does).
    expect((await gateway.call(chat(key, 30), { settle: true })).status).toBe(200);
    expect(await budgetOf(`/keys/${id}`, "tokens")).toMatchObject({ used: 100, leased: 100 });
    await closeLeases(gateway);
    expect(await budgetOf(`/keys/${id}`, "tokens")).toMatchObject({ used: 30, leased: 0 });
    expect((await gateway.call(chat(key, 250), { settle: true })).status).toBe(200);
    await closeLeases(gateway);
    expect(await budgetOf(`/keys/${id}`, "tokens")).toMatchObject({ used: 280 });
    // 280 + a reserve of 100 passes 300: refused before forwarding.
    const refused = await gateway.call(chat(key, 5), { settle: true });
    expect(refused.status).toBe(429);
    expect(await problemOf(refused)).toMatchObject({ code: "budget_exhausted", category: "tokens", budget: { used: 280, amount: 300 } });
    // A debt is the only way past the amount. The new amount reaches this
    // gateway (another isolate than the admin call's) once its memory of the
    // refusal ends: budgets.exhausted_cache_s, 5 s.
    await setBudget(`/keys/${id}`, "tokens", { amount: 400, period: "month" });
    expect((await gateway.call(chat(key, 5), { settle: true })).status).toBe(429);
    gateway.clock.nowMs += 5_000;
    expect((await gateway.call(chat(key, 500), { settle: true })).status).toBe(200);
    await closeLeases(gateway);
    expect(await budgetOf(`/keys/${id}`, "tokens")).toMatchObject({ used: 780, remaining: 0 });
  });

  it("keeps the reserve when the answer names no cost", async () => {
    const { key, tenant } = await keyed();
    await setBudget(`/tenants/${tenant}`, "tokens", { amount: 1000, period: "day" });
    expect((await clockedGateway(CONFIG).call(chat(key), { settle: true })).status).toBe(200);
    expect(await budgetOf(`/tenants/${tenant}`, "tokens")).toMatchObject({ used: 100 });
  });
});

describe("credits", () => {
  it("answers 402 credits_exhausted without Retry-After once spent, and admits again after a top-up", async () => {
    const { key, tenant } = await keyed();
    await setBudget(`/tenants/${tenant}`, "request", { amount: 2, period: "none" });
    expect((await callGateway(get(key), { TOLLGATE: CONFIG }, { settle: true })).status).toBe(200);
    expect((await callGateway(get(key), { TOLLGATE: CONFIG }, { settle: true })).status).toBe(200);
    const refused = await callGateway(get(key), { TOLLGATE: CONFIG }, { settle: true });
    expect(refused.status).toBe(402);
    expect(refused.headers.get("retry-after")).toBeNull();
    expect(await problemOf(refused)).toMatchObject({ code: "credits_exhausted", category: "request", budget: { owner: `tenant:${tenant}`, period: "none", amount: 2, used: 2, resets_at: null } });
    await jsonOf(await adminCall("POST", `/tenants/${tenant}/budgets/request/topups`, CONFIG, { body: { amount: 1, reason: "test" } }), 201);
    expect((await callGateway(get(key), { TOLLGATE: CONFIG }, { settle: true })).status).toBe(200);
  });
});

describe("shadow mode", () => {
  it("forwards every request, records every spend past the amount, and marks the would-be refusals", async () => {
    const { key, tenant } = await keyed();
    await setBudget(`/tenants/${tenant}`, "request", { amount: 1, period: "month" });
    const tag = unique("shadow");
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await callGateway(get(key, tag), { TOLLGATE: SHADOW }, { settle: true }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(answers.map((r) => r.headers.get("tollgate-shadow"))).toEqual([null, "budget_exhausted", "budget_exhausted"]);
    expect(await originLog(tag)).toHaveLength(3);
    expect(await budgetOf(`/tenants/${tenant}`, "request")).toMatchObject({ used: 3, remaining: 0 });
  });
});

describe("failure and all or nothing", () => {
  it("answers 503 budget_unavailable when the quota object fails, forwards nothing, and charges no rate limit", async () => {
    const { tenant } = await keyed();
    const tight = testConfig({ categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: [{ count: 1, window_s: 60 }], tenant: HUGE } } } });
    const key = (await mintKey(tight, tenant)).key;
    await setBudget(`/tenants/${tenant}`, "request", { amount: 10, period: "month" });
    const broken = {
      idFromName: (name: string) => env.TENANT_QUOTA.idFromName(name),
      get: () => ({
        budgetLease: async () => {
          throw new Error("Durable Object reset because its code was updated.");
        },
      }),
    } as unknown as DurableObjectNamespace;
    const gateway = clockedGateway(tight, { TENANT_QUOTA: broken });
    const tag = unique("broken");
    const res = await gateway.call(get(key, tag), { settle: true });
    expect(res.status).toBe(503);
    expect((await problemOf(res)).code).toBe("budget_unavailable");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await originLog(tag)).toHaveLength(0);
    expect(await budgetOf(`/tenants/${tenant}`, "request")).toMatchObject({ used: 0 });
    // The failed object is left alone for a second (503 without a call), then asked again.
    const healthy = { ...env, TOLLGATE: tight } as never;
    const meanwhile = await gateway.runtime.gateway(get(key), healthy, null);
    expect((await problemOf(meanwhile)).code).toBe("budget_unavailable");
    gateway.clock.nowMs += 1_000;
    // The key's 1 per minute was given back both times: the same runtime (its limiter table), with the object healthy again, admits it.
    const again = await gateway.runtime.gateway(get(key), healthy, null);
    expect(again.status).toBe(200);
  });

  it("gives the rate-limit charge back when a budget refuses", async () => {
    const { tenant } = await keyed();
    const tight = testConfig({ categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: [{ count: 2, window_s: 60 }], tenant: HUGE } } } });
    const key = (await mintKey(tight, tenant)).key;
    await setBudget(`/tenants/${tenant}`, "request", { amount: 1, period: "month" });
    const gateway = clockedGateway(tight);
    expect((await gateway.call(get(key), { settle: true })).status).toBe(200);
    expect((await gateway.call(get(key), { settle: true })).status).toBe(429);
    await setBudget(`/tenants/${tenant}`, "request", { amount: 5, period: "month" });
    gateway.runtime.keys.clearAll();
    // The refusal is remembered for 5 s (budgets.exhausted_cache_s), and charges nothing either.
    expect((await gateway.call(get(key), { settle: true })).status).toBe(429);
    gateway.clock.nowMs += 5_000;
    // 2 per minute: the refused requests charged nothing, so one more fits (5 s of 30 earned back is not a unit), and the one after does not.
    expect((await gateway.call(get(key), { settle: true })).status).toBe(200);
    const limited = await gateway.call(get(key), { settle: true });
    expect((await problemOf(limited)).code).toBe("rate_limited");
  });

  it("releases the reserve of a request a later step refuses", async () => {
    const { key, tenant } = await keyed();
    await setBudget(`/tenants/${tenant}`, "request", { amount: 5, period: "month" });
    // A store route without Content-Length: 411 after the budget step.
    const res = await callGateway(gatewayRequest("/objects/x", { method: "PUT", ip: "198.51.100.93", headers: { authorization: `Bearer ${key}` } }), { TOLLGATE: CONFIG }, { settle: true });
    expect(res.status).toBe(411);
    // The unit went back to the gateway's lease: nothing is known spent, and the lease holds it for the next request.
    await eventually(async () => (await spentOf(`/tenants/${tenant}`, "request")) === 0, "the spend is given back");
  });
});

describe("orgs", () => {
  it("holds an org budget across its tenants, and the tenant's budget counts only what was admitted", async () => {
    const org = unique("bigco");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    const a = await keyed({ org });
    const b = await keyed({ org });
    await setBudget(`/orgs/${org}`, "request", { amount: 3, period: "month" });
    await setBudget(`/tenants/${a.tenant}`, "request", { amount: 100, period: "month" });
    const gateway = clockedGateway(CONFIG);
    const answers = await Promise.all([a, b, a, b, a, b].map((t) => gateway.call(get(t.key), { settle: true })));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(3);
    const refused = answers.find((r) => r.status === 429)!;
    expect(await problemOf(refused)).toMatchObject({ code: "budget_exhausted", budget: { owner: `org:${org}`, amount: 3, used: 3 } });
    const admittedA = answers.filter((r, i) => i % 2 === 0 && r.status === 200).length;
    // Units tenant a's lease holds for requests the org refused go back when the lease ends.
    await closeLeases(gateway);
    expect((await budgetOf(`/tenants/${a.tenant}`, "request")).used).toBe(admittedA);
  });
});

describe("orgs that fail", () => {
  it("answers 503 budget_unavailable when the org's object fails, spending nothing of the tenant's budget", async () => {
    const org = unique("brokenorg");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    const { key, tenant } = await keyed({ org });
    await setBudget(`/orgs/${org}`, "request", { amount: 10, period: "month" });
    await setBudget(`/tenants/${tenant}`, "request", { amount: 10, period: "month" });
    const broken = {
      idFromName: (name: string) => env.ORG_QUOTA.idFromName(name),
      get: () => ({
        budgetLease: async () => {
          throw new Error("Network connection lost.");
        },
      }),
    } as unknown as DurableObjectNamespace;
    const tag = unique("brokenorg");
    const res = await callGateway(get(key, tag), { TOLLGATE: CONFIG, ORG_QUOTA: broken }, { settle: true });
    expect(res.status).toBe(503);
    expect((await problemOf(res)).code).toBe("budget_unavailable");
    expect(await originLog(tag)).toHaveLength(0);
    // The tenant's lease keeps its unit unspent for the next request (nothing is known spent).
    expect(await spentOf(`/tenants/${tenant}`, "request")).toBe(0);
  });
});

describe("the hot path", () => {
  it("makes no quota object call for requests that spend no budget, and few for many that do", async () => {
    const { key, tenant } = await keyed();
    const { ns, calls } = countingQuota();
    for (let i = 0; i < 5; i++) expect((await callGateway(get(key), { TOLLGATE: CONFIG, TENANT_QUOTA: ns }, { settle: true })).status).toBe(200);
    expect(calls).toEqual([]);
    // A tokens budget does not apply to a request that spends no tokens.
    await setBudget(`/tenants/${tenant}`, "tokens", { amount: 10, period: "month" });
    for (let i = 0; i < 3; i++) expect((await callGateway(get(key), { TOLLGATE: CONFIG, TENANT_QUOTA: ns }, { settle: true })).status).toBe(200);
    expect(calls).toEqual([]);
    await setBudget(`/tenants/${tenant}`, "request", { amount: 1_000_000, period: "month" });
    // Far from the budget's end, the gateway's lease grows with demand (doubling from one unit, so 1,000 requests from
    // cold cost about ten asks); then budgeted requests cost at most 10 object calls per 1,000: leases, and the
    // reports of what was spent (at least every second while it spends).
    // Metering written once per interval, not as each request ends alone (this test waits for each request's background work).
    const gateway = clockedGateway({ ...CONFIG, usage: { flush_when_idle: false } }, { TENANT_QUOTA: ns });
    const start = gateway.clock.nowMs;
    const send = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        gateway.clock.nowMs = start + i * 2;
        // The body read (its in-flight slot back); the background work is not waited for, request by request.
        const res = await gateway.call(get(key));
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
    };
    await send(0, 150);
    calls.length = 0;
    await send(150, 650);
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.length).toBeLessThanOrEqual(5);
    expect(calls.every((c) => c === "budgetLease")).toBe(true);
  });
});

describe("thresholds", () => {
  it("writes a budget_threshold audit event and queues a budget.threshold alert once per threshold and period", async () => {
    const { key, tenant } = await keyed();
    await setBudget(`/tenants/${tenant}`, "request", { amount: 5, period: "month" });
    const sent: { type: string; tenant?: string; data: Record<string, unknown> }[] = [];
    const ALERTS = { send: async (message: unknown) => void sent.push(message as (typeof sent)[number]) };
    const config = { ...CONFIG, alerts: { webhook_url: `${env.ORIGIN_URL}/__origin/webhook/${unique("hook")}` } };
    for (let i = 0; i < 7; i++) await callGateway(get(key), { TOLLGATE: config, ALERTS }, { settle: true });
    await eventually(() => sent.length === 2, "two alerts are queued");
    expect(sent.map((a) => [a.type, a.tenant, a.data.owner, a.data.threshold, a.data.used])).toEqual([
      ["budget.threshold", tenant, `tenant:${tenant}`, 0.8, 4],
      ["budget.threshold", tenant, `tenant:${tenant}`, 1, 5],
    ]);
    const { events } = await jsonOf<{ events: { kind: string; subject: string; detail: Record<string, unknown> }[] }>(await adminCall("GET", `/audit?tenant=${tenant}&kind=budget_threshold`, CONFIG), 200);
    expect(events.map((e) => [e.subject, e.detail.threshold, e.detail.used]).reverse()).toEqual([
      [`tenant:${tenant}`, 0.8, 4],
      [`tenant:${tenant}`, 1, 5],
    ]);
  });
});

describe("metering", () => {
  it("exports the spend of each budget per month: reserves, refunds and debts, and releases taken back", async () => {
    const config = { ...CONFIG, usage: { flush_interval_s: 0.001 } };
    const org = unique("meterorg");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    const { key, tenant, id } = await keyed({ org });
    await setBudget(`/tenants/${tenant}`, "request", { amount: 100, period: "month" });
    await setBudget(`/orgs/${org}`, "request", { amount: 100, period: "month" });
    await setBudget(`/keys/${id}`, "tokens", { amount: 10_000, period: "day" });
    const gateway = clockedGateway(config);
    expect((await gateway.call(get(key), { settle: true })).status).toBe(200);
    expect((await gateway.call(chat(key, 30), { settle: true })).status).toBe(200);
    expect((await gateway.call(chat(key, 250), { settle: true })).status).toBe(200);
    // Refused by a later step (411): metered, then taken back.
    expect((await gateway.call(gatewayRequest("/objects/x", { method: "PUT", ip: "198.51.100.94", headers: { authorization: `Bearer ${key}` } }), { settle: true })).status).toBe(411);
    await gateway.runtime.meter.flushNow(database(env.DB), gateway.clock.nowMs);
    const text = await (await adminCall("GET", `/usage/export?tenant=${tenant}&format=ndjson`, CONFIG)).text();
    const rows = text.trim().split("\n").map((line) => JSON.parse(line) as { metric: string; value: number; status: string });
    const budgetRows = Object.fromEntries(rows.filter((r) => r.metric.startsWith("budget:")).map((r) => [r.metric, [r.value, r.status]]));
    expect(budgetRows).toEqual({
      [`budget:key:${id}:tokens`]: [280, "provisional"],
      [`budget:org:${org}:request`]: [3, "provisional"],
      [`budget:tenant:${tenant}:request`]: [3, "provisional"],
    });
  });
});

describe("JWT callers", () => {
  it("spends the budget of the tenant a token names", async () => {
    const tenant = unique("jwtbudget");
    await createTenant(CONFIG, tenant);
    await setBudget(`/tenants/${tenant}`, "request", { amount: 2, period: "month" });
    const key = await newKey("ES256");
    const jwks = jwksAddress();
    await publishJwks(jwks.name, [key.jwk]);
    const iss = `https://${unique("idp")}.example/`;
    const gateway = clockedGateway({ ...CONFIG, jwt: { issuers: [{ issuer: iss, jwks_url: jwks.url, tenant_claim: "org_id" }] } }, {}, T0_MS);
    const token = await signToken(key, { iss, sub: "alice@example.com", claims: { org_id: tenant } });
    const call = () => gateway.call(gatewayRequest("/api/thing", { ip: "198.51.100.95", headers: { authorization: `Bearer ${token}` } }), { settle: true });
    expect((await call()).status).toBe(200);
    expect((await call()).status).toBe(200);
    const refused = await call();
    expect(refused.status).toBe(429);
    expect(await problemOf(refused)).toMatchObject({ code: "budget_exhausted", budget: { owner: `tenant:${tenant}`, used: 2 } });
  });
});

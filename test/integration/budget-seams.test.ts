// Budgets where an operator's write meets the traffic: re-applying a budget
// unchanged (the CLI, infrastructure as code) does not announce again the
// thresholds already announced this period; an org's threshold alert names
// the org; an org budget written now applies to the next request of a
// tenant this isolate has cached; and a response-priced `request` category
// settles the request's own unit with its cost.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { callGateway, clockedGateway, eventually, gatewayRequest, problemOf, unique } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";
import { recordingQueue } from "./alert-helpers";

const HUGE = [{ count: 1_000_000, window_s: 1 }];

function configWith(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return testConfig({
    categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: HUGE, tenant: HUGE } } },
    alerts: { webhook_url: `${env.ORIGIN_URL}/__origin/webhook/${unique("hook-budget")}` },
    ...extra,
  });
}

async function putBudget(config: Record<string, unknown>, path: string, category: string, body: Record<string, unknown>): Promise<void> {
  const res = await adminCall("PUT", `${path}/budgets/${category}`, config, { body });
  expect([200, 201]).toContain(res.status);
}

/** A new org with one tenant and a key of that tenant. */
async function orgTenantWithKey(config: Record<string, unknown>, prefix: string): Promise<{ org: string; tenant: string; key: string }> {
  const org = unique(prefix);
  await jsonOf(await adminCall("PUT", `/orgs/${org}`, config, { body: {} }), 201);
  const tenant = unique(`${prefix}-t`);
  await createTenant(config, tenant, { org });
  return { org, tenant, key: (await mintKey(config, tenant)).key };
}

function get(key: string): Request {
  return gatewayRequest("/things", { ip: "198.51.100.93", headers: { authorization: `Bearer ${key}` } });
}

describe("budget thresholds", () => {
  it("does not announce again the thresholds already announced this period when the same budget is applied again", async () => {
    const config = configWith();
    const tenant = unique("reapplied");
    await createTenant(config, tenant);
    const { key } = await mintKey(config, tenant);
    const budget = { amount: 5, period: "month" };
    await putBudget(config, `/tenants/${tenant}`, "request", budget);
    const { ALERTS, sent } = recordingQueue();
    const thresholds = () => sent.filter((a) => a.type === "budget.threshold").map((a) => a.data.threshold);
    for (let i = 0; i < 4; i++) expect((await callGateway(get(key), { TOLLGATE: config, ALERTS }, { settle: true })).status).toBe(200);
    await eventually(() => thresholds().includes(0.8), "the 80 % alert is queued");
    // Applied again, unchanged (a CLI run, a deploy of the same config), between each of the last spends.
    for (let i = 0; i < 2; i++) {
      await putBudget(config, `/tenants/${tenant}`, "request", budget);
      await callGateway(get(key), { TOLLGATE: config, ALERTS }, { settle: true });
    }
    await eventually(() => thresholds().includes(1), "the 100 % alert is queued");
    await putBudget(config, `/tenants/${tenant}`, "request", budget);
    expect((await callGateway(get(key), { TOLLGATE: config, ALERTS }, { settle: true })).status).toBe(429);
    expect(thresholds()).toEqual([0.8, 1]);
  });

  it("names the org in an org budget's threshold alert, beside the tenant whose request crossed it", async () => {
    const config = configWith();
    const { org, tenant, key } = await orgTenantWithKey(config, "alertorg");
    await putBudget(config, `/orgs/${org}`, "request", { amount: 5, period: "month" });
    const { ALERTS, sent } = recordingQueue();
    for (let i = 0; i < 4; i++) expect((await callGateway(get(key), { TOLLGATE: config, ALERTS }, { settle: true })).status).toBe(200);
    await eventually(() => sent.length >= 1, "the org budget's alert is queued");
    expect(sent[0]).toMatchObject({ type: "budget.threshold", org, tenant, data: { owner: `org:${org}`, threshold: 0.8, amount: 5 } });
  });
});

describe("an org budget written now", () => {
  it("applies to the next request of a tenant whose key this isolate has cached", async () => {
    const config = configWith();
    const { org, key } = await orgTenantWithKey(config, "liveorg");
    // The key and its tenant (with no org budget) are now cached in this isolate.
    expect((await callGateway(get(key), { TOLLGATE: config }, { settle: true })).status).toBe(200);
    await putBudget(config, `/orgs/${org}`, "request", { amount: 2, period: "month" });
    const answers: Response[] = [];
    for (let i = 0; i < 3; i++) answers.push(await callGateway(get(key), { TOLLGATE: config }, { settle: true }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(await problemOf(answers[2]!)).toMatchObject({ code: "budget_exhausted", budget: { owner: `org:${org}`, amount: 2 } });
  });
});

describe("a response-priced request category", () => {
  it("settles the request's own unit with the cost the answer names: a call costing 0 leaves 1 spent", async () => {
    // The request category priced by the answer, reserve 5: a request reserves its own unit and the 5.
    const config = configWith({ routes: [{ method: "POST", path: "/v1/count", response_charge: { category: "request", header: "x-usage-total-tokens", reserve: 5 } }] });
    const tenant = unique("priced-request");
    await createTenant(config, tenant);
    const { key } = await mintKey(config, tenant);
    await putBudget(config, `/tenants/${tenant}`, "request", { amount: 6, period: "month" });
    const call = () => gatewayRequest("/v1/count", { method: "POST", ip: "198.51.100.94", headers: { authorization: `Bearer ${key}`, "x-origin-usage-header": "0" }, body: "{}" });
    const gateway = clockedGateway(config);
    expect((await gateway.call(call(), { settle: true })).status).toBe(200);
    // 1 of 6 is spent (the request's unit; the answer priced the rest at 0): the next reserve of 1 + 5 does not fit.
    const refused = await gateway.call(call(), { settle: true });
    expect(refused.status).toBe(429);
    expect(await problemOf(refused)).toMatchObject({ code: "budget_exhausted", category: "request", budget: { owner: `tenant:${tenant}`, amount: 6 } });
  });
});

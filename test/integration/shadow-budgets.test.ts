// A shadow budget through the Worker, on a clock the test holds: spent from
// as if enforced (leases, thresholds, their alerts and audit events, marked
// shadow), it reaches its amount and refuses nothing past it (what it cannot
// take is not charged to it); the requests it would have refused go on,
// marked and counted per caller; an enforced budget beside it decides as it
// would alone; switched on, it refuses from the spend it kept.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { trafficFlushOptionsFor } from "../../src/limits/traffic";
import { clockedGateway, eventually, gatewayRequest, problemOf, unique } from "../helpers";
import { adminCall, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const HUGE = [{ count: 1_000_000, window_s: 1 }];

function configFor(hook: string): Record<string, unknown> {
  return testConfig({
    categories: { admin: { limits: { admin: HUGE } }, request: { limits: { key: HUGE, tenant: HUGE } } },
    alerts: { webhook_url: `${env.ORIGIN_URL}/__origin/webhook/${hook}` },
  });
}

interface Alert {
  type: string;
  data: Record<string, unknown>;
}

function recordingQueue(): { ALERTS: { send(message: unknown): Promise<void> }; sent: Alert[] } {
  const sent: Alert[] = [];
  return { ALERTS: { send: async (message: unknown) => void sent.push(message as Alert) }, sent };
}

function get(key: string): Request {
  return gatewayRequest("/things", { ip: "198.51.100.77", headers: { authorization: `Bearer ${key}` } });
}

const MARK = 'budget_exhausted;policy="budget-request-key-month"';

describe("a shadow budget", () => {
  it("reaches its amount without refusing, fires its 80 % and 100 % alerts marked shadow, and counts whom it would have refused", async () => {
    const config = configFor(unique("hook-shadow-budget"));
    const tenant = unique("sbudget");
    await createTenant(config, tenant);
    const { id, key } = await mintKey(config, tenant);
    const put = await jsonOf<{ shadow: boolean; amount: number }>(await adminCall("PUT", `/keys/${id}/budgets/request`, config, { body: { amount: 5, period: "month", shadow: true } }), 201);
    expect(put).toMatchObject({ shadow: true, amount: 5 });
    const gateway = clockedGateway(config);
    const { ALERTS, sent } = recordingQueue();

    const answers: Response[] = [];
    for (let i = 0; i < 8; i++) answers.push(await gateway.call(get(key), { settle: true, env: { ALERTS } }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 200]);
    expect(answers.map((r) => r.headers.get("tollgate-shadow"))).toEqual([null, null, null, null, null, MARK, MARK, MARK]);
    // Not advertised: the answers carry the rate limits' headers, never the shadow budget's.
    for (const r of answers) expect(r.headers.get("ratelimit-policy")).not.toContain("budget-");

    // What it could take was charged; what it could not, was not: used is the amount, not 8.
    await gateway.runtime.budgetLeases.closeAll({ tenant: env.TENANT_QUOTA, org: env.ORG_QUOTA }, null, gateway.clock.nowMs, () => {});
    const budget = await jsonOf<{ used: number; leased: number; shadow: boolean }>(await adminCall("GET", `/keys/${id}/budgets/request`, config), 200);
    expect(budget).toMatchObject({ used: 5, leased: 0, shadow: true });

    await eventually(() => sent.filter((a) => a.type === "budget.threshold").length >= 2, "both thresholds' alerts are queued");
    const thresholds = sent.filter((a) => a.type === "budget.threshold").map((a) => a.data);
    expect(thresholds).toEqual([
      expect.objectContaining({ owner: `key:${id}`, threshold: 0.8, used: 4, shadow: true }),
      expect.objectContaining({ owner: `key:${id}`, threshold: 1, used: 5, shadow: true }),
    ]);
    const audit = await jsonOf<{ events: { detail: Record<string, unknown> }[] }>(await adminCall("GET", `/audit?kind=budget_threshold&tenant=${tenant}`, config), 200);
    expect(audit.events.map((e) => [e.detail.threshold, e.detail.shadow]).sort()).toEqual([
      [0.8, true],
      [1, true],
    ]);

    await gateway.runtime.traffic.flushNow(database(env.DB), gateway.clock.nowMs, trafficFlushOptionsFor(gateway.runtime, env as never, 86_400_000));
    const shadow = await jsonOf<{ policies: { policy: string; tenants: Record<string, number>; callers: { caller: string; would_refuse: number }[] }[] }>(await adminCall("GET", "/traffic/shadow?minutes=60", config), 200);
    const policy = shadow.policies.find((p) => p.policy === "budget-request-key-month");
    expect(policy?.tenants[tenant]).toBe(3);
    expect(policy?.callers.find((c) => c.caller === `key:${id}`)?.would_refuse).toBe(3);
  });

  it("in mode shadow is charged past its amount as an enforced one is, and names each spend it could not take (found by the contract fuzz)", async () => {
    const config = { ...configFor(unique("hook-shadow-budget-3")), mode: "shadow" };
    const tenant = unique("sbudget3");
    await createTenant(config, tenant);
    const { id, key } = await mintKey(config, tenant);
    await jsonOf(await adminCall("PUT", `/keys/${id}/budgets/request`, config, { body: { amount: 2, period: "month", shadow: true } }), 201);
    const gateway = clockedGateway(config);
    const answers: Response[] = [];
    for (let i = 0; i < 4; i++) answers.push(await gateway.call(get(key), { settle: true }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    // Shadow mode records every spend (enforce would start from true figures), so the 3rd and 4th are charged too: marked all the same.
    expect(answers.map((r) => r.headers.get("tollgate-shadow"))).toEqual([null, null, MARK, MARK]);
    const budget = await jsonOf<{ used: number; shadow: boolean }>(await adminCall("GET", `/keys/${id}/budgets/request`, config), 200);
    expect(budget).toMatchObject({ used: 4, shadow: true });
  });

  it("is decided beside an enforced budget, and switched on refuses from the spend it kept", async () => {
    const config = configFor(unique("hook-shadow-budget-2"));
    const tenant = unique("sbudget2");
    await createTenant(config, tenant);
    const { id, key } = await mintKey(config, tenant);
    // In the same quota object: the key's budget tried at 2, the tenant's enforced at 4.
    await jsonOf(await adminCall("PUT", `/keys/${id}/budgets/request`, config, { body: { amount: 2, period: "month", shadow: true } }), 201);
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, config, { body: { amount: 4, period: "month" } }), 201);
    const gateway = clockedGateway(config);
    const statuses: number[] = [];
    const marks: (string | null)[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await gateway.call(get(key), { settle: true });
      statuses.push(r.status);
      marks.push(r.headers.get("tollgate-shadow"));
    }
    // The enforced budget admits exactly its 4, as it would alone; the shadow one marks the 3rd and 4th.
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    expect(marks.slice(0, 4)).toEqual([null, null, MARK, MARK]);

    // Switched on (its remembered refusal ends within budgets.exhausted_cache_s): refused at once, used stays 2.
    await jsonOf(await adminCall("PUT", `/keys/${id}/budgets/request`, config, { body: { amount: 2, period: "month" } }), 200);
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, config, { body: { amount: 100, period: "month" } }), 200);
    gateway.clock.nowMs += 6_000;
    const refused = await gateway.call(get(key), { settle: true });
    expect(refused.status).toBe(429);
    expect((await problemOf(refused)).budget).toMatchObject({ owner: `key:${id}`, used: 2, amount: 2 });
  });
});

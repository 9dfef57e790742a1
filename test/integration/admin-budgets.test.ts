// The budget calls of the admin API through the Worker: PUT, GET, DELETE and
// top-ups for tenants, keys and orgs; bad input named by field; 404 for an
// unknown owner; every write audited; a deleted key, tenant or org taking its
// budgets with it; the OpenAPI document.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { eventually, unique } from "../helpers";
import { adminCall, AUDITOR_TOKEN, createTenant, jsonOf, mintKey, testConfig } from "./admin-helpers";

const CONFIG = testConfig({ routes: [{ method: "POST", path: "/v1/chat", charges: { chat: 1 }, response_charge: { category: "tokens", header: "x-usage-total-tokens", reserve: 100 } }] });

interface Budget {
  owner: string;
  category: string;
  period: string;
  amount: number;
  used: number;
  remaining: number;
  thresholds: number[];
  period_start: string | null;
  resets_at: string | null;
}

async function auditKinds(subject: string): Promise<string[]> {
  const { events } = await jsonOf<{ events: { kind: string; subject: string }[] }>(await adminCall("GET", `/audit?limit=200`, CONFIG), 200);
  return events.filter((e) => e.subject === subject).map((e) => e.kind).reverse();
}

describe("budgets of a tenant", () => {
  it("creates, reads, replaces, lists and deletes a budget, each write audited", async () => {
    const tenant = unique("acme");
    await createTenant(CONFIG, tenant);
    const created = await jsonOf<Budget>(await adminCall("PUT", `/tenants/${tenant}/budgets/tokens`, CONFIG, { body: { amount: 1_000_000, period: "month", thresholds: [0.5, 0.9] } }), 201);
    expect(created).toMatchObject({ owner: `tenant:${tenant}`, category: "tokens", period: "month", amount: 1_000_000, used: 0, remaining: 1_000_000, thresholds: [0.5, 0.9] });
    expect(created.resets_at).toMatch(/^\d{4}-\d{2}-01T00:00:00\.000Z$/);
    expect(await jsonOf<Budget>(await adminCall("GET", `/tenants/${tenant}/budgets/tokens`, CONFIG), 200)).toEqual(created);
    const replaced = await jsonOf<Budget>(await adminCall("PUT", `/tenants/${tenant}/budgets/tokens`, CONFIG, { body: { amount: 5, period: "day" } }), 200);
    expect(replaced).toMatchObject({ amount: 5, period: "day", thresholds: [0.8, 1] });
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, CONFIG, { body: { amount: 100_000, period: "none" } }), 201);
    const listed = await jsonOf<{ owner: string; budgets: Budget[] }>(await adminCall("GET", `/tenants/${tenant}/budgets`, CONFIG), 200);
    expect(listed.budgets.map((b) => [b.category, b.period, b.resets_at])).toEqual([
      ["request", "none", null],
      ["tokens", "day", replaced.resets_at],
    ]);
    expect(await jsonOf(await adminCall("DELETE", `/tenants/${tenant}/budgets/tokens`, CONFIG), 200)).toEqual({ owner: `tenant:${tenant}`, category: "tokens", deleted: true });
    await jsonOf(await adminCall("GET", `/tenants/${tenant}/budgets/tokens`, CONFIG), 404);
    await jsonOf(await adminCall("DELETE", `/tenants/${tenant}/budgets/tokens`, CONFIG), 404);
    const row = await env.DB.prepare("SELECT budgets FROM tenants WHERE slug = ?").bind(tenant).first<{ budgets: string }>();
    expect(JSON.parse(row!.budgets)).toEqual({ request: { period: "none" } });
    expect(await auditKinds(`tenant:${tenant}`)).toEqual(["budget_created", "budget_replaced", "budget_created", "budget_deleted"]);
  });

  it("adds top-ups to credits, audited with the reason, and refuses one on a periodic budget", async () => {
    const tenant = unique("beta");
    await createTenant(CONFIG, tenant);
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, CONFIG, { body: { amount: 100_000, period: "none" } }), 201);
    const topped = await jsonOf<Budget>(await adminCall("POST", `/tenants/${tenant}/budgets/request/topups`, CONFIG, { body: { amount: 50_000, reason: "invoice 118" } }), 201);
    expect(topped).toMatchObject({ amount: 150_000, remaining: 150_000, period: "none" });
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/tokens`, CONFIG, { body: { amount: 10, period: "week" } }), 201);
    const refused = await jsonOf<{ code: string; field: string }>(await adminCall("POST", `/tenants/${tenant}/budgets/tokens/topups`, CONFIG, { body: { amount: 5 } }), 400);
    expect(refused).toMatchObject({ code: "invalid_request", field: "category" });
    await jsonOf(await adminCall("POST", `/tenants/${tenant}/budgets/chat/topups`, CONFIG, { body: { amount: 5 } }), 404);
    const { events } = await jsonOf<{ events: { kind: string; detail: Record<string, unknown> }[] }>(await adminCall("GET", `/audit?tenant=${tenant}&kind=budget_topup`, CONFIG), 200);
    expect(events.map((e) => e.detail)).toEqual([{ category: "request", amount: 50_000, reason: "invoice 118", new_amount: 150_000 }]);
  });
});

describe("top-ups", () => {
  async function credits(prefix: string): Promise<string> {
    const tenant = unique(prefix);
    await createTenant(CONFIG, tenant);
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, CONFIG, { body: { amount: 100, period: "none" } }), 201);
    return tenant;
  }

  async function topUpEvents(tenant: string): Promise<unknown[]> {
    const { events } = await jsonOf<{ events: { detail: unknown }[] }>(await adminCall("GET", `/audit?tenant=${tenant}&kind=budget_topup`, CONFIG), 200);
    return events.map((e) => e.detail);
  }

  it("adds a top-up sent twice with the same Idempotency-Key once, and answers the repeat as it answered the first", async () => {
    const tenant = await credits("idem");
    const send = (key: string, amount = 50) => adminCall("POST", `/tenants/${tenant}/budgets/request/topups`, CONFIG, { body: { amount, reason: "invoice 7" }, headers: { "idempotency-key": key } });
    const first = await send("inv-7");
    const firstText = await first.text();
    expect(first.status).toBe(201);
    const again = await send("inv-7");
    expect(again.status).toBe(201);
    expect(await again.text()).toBe(firstText);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(JSON.parse(firstText)).toMatchObject({ amount: 150 });
    expect((await jsonOf<Budget>(await adminCall("GET", `/tenants/${tenant}/budgets/request`, CONFIG), 200)).amount).toBe(150);
    expect(await topUpEvents(tenant)).toHaveLength(1);
    // Another key is another top-up; a key given to another amount is refused, adding nothing.
    expect((await jsonOf<Budget>(await send("inv-8"), 201)).amount).toBe(200);
    const reused = await jsonOf<{ code: string }>(await send("inv-7", 60), 409);
    expect(reused.code).toBe("conflict");
    expect((await jsonOf<Budget>(await adminCall("GET", `/tenants/${tenant}/budgets/request`, CONFIG), 200)).amount).toBe(200);
  });

  it("refuses an Idempotency-Key that is empty, too long or not visible ASCII, naming the header", async () => {
    const tenant = await credits("idem-bad");
    for (const key of ["", "k".repeat(201), "two words"]) {
      const refused = await jsonOf<{ field: string }>(await adminCall("POST", `/tenants/${tenant}/budgets/request/topups`, CONFIG, { body: { amount: 1 }, headers: { "idempotency-key": key } }), 400);
      expect(refused.field).toBe("Idempotency-Key");
    }
    expect((await jsonOf<Budget>(await adminCall("GET", `/tenants/${tenant}/budgets/request`, CONFIG), 200)).amount).toBe(100);
  });

  it("answers 201 for a top-up that landed when its audit write fails, and writes the audit event in the background", async () => {
    const tenant = await credits("idem-audit");
    let failures = 1;
    const flakyAudit = new Proxy(env.DB, {
      get(target, prop) {
        const value: unknown = Reflect.get(target, prop);
        if (prop !== "prepare" || typeof value !== "function") return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        return (query: string) => {
          if (/^insert into "audit_events"/i.test(query) && failures > 0) {
            failures--;
            throw new Error("D1_ERROR: simulated outage");
          }
          return (value as (q: string) => unknown).call(target, query);
        };
      },
    });
    const topped = await jsonOf<Budget>(await adminCall("POST", `/tenants/${tenant}/budgets/request/topups`, CONFIG, { body: { amount: 25, reason: "invoice 9" }, env: { DB: flakyAudit } }), 201);
    expect(topped.amount).toBe(125);
    expect(failures).toBe(0);
    await eventually(async () => (await topUpEvents(tenant)).length === 1, "the audit event is written on a retry");
    expect(await topUpEvents(tenant)).toEqual([{ category: "request", amount: 25, reason: "invoice 9", new_amount: 125 }]);
  });
});

describe("bad input", () => {
  it.each([
    [{ amount: 1.5, period: "day" }, "amount"],
    [{ amount: -1, period: "day" }, "amount"],
    [{ amount: 2 ** 53 + 2, period: "day" }, "amount"],
    [{ amount: "10", period: "day" }, "amount"],
    [{ period: "day" }, "amount"],
    [{ amount: 10, period: "year" }, "period"],
    [{ amount: 10 }, "period"],
    [{ amount: 10, period: "day", thresholds: [1.5] }, "thresholds.0"],
    [{ amount: 10, period: "day", extra: 1 }, "extra"],
  ])("refuses %j naming %s", async (body, field) => {
    const tenant = unique("bad");
    await createTenant(CONFIG, tenant);
    const problem = await jsonOf<{ code: string; field: string }>(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, CONFIG, { body }), 400);
    expect(problem).toMatchObject({ code: "invalid_request", field });
    await jsonOf(await adminCall("GET", `/tenants/${tenant}/budgets/request`, CONFIG), 404);
  });

  it("accepts an amount of exactly 2^53 and 0", async () => {
    const tenant = unique("edge");
    await createTenant(CONFIG, tenant);
    expect(await jsonOf<Budget>(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, CONFIG, { body: { amount: 2 ** 53, period: "none" } }), 201)).toMatchObject({ amount: 2 ** 53 });
    expect(await jsonOf<Budget>(await adminCall("PUT", `/tenants/${tenant}/budgets/tokens`, CONFIG, { body: { amount: 0, period: "day" } }), 201)).toMatchObject({ amount: 0 });
  });

  it("refuses an unknown category naming it, and answers 404 for an unknown tenant, key or org", async () => {
    const tenant = unique("cat");
    await createTenant(CONFIG, tenant);
    const problem = await jsonOf<{ field: string; detail: string }>(await adminCall("PUT", `/tenants/${tenant}/budgets/widgets`, CONFIG, { body: { amount: 1, period: "day" } }), 400);
    expect(problem.field).toBe("category");
    expect(problem.detail).toContain("chat");
    // Categories the config names are known: the route's `chat`.
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/chat`, CONFIG, { body: { amount: 1, period: "day" } }), 201);
    await jsonOf(await adminCall("PUT", `/tenants/${unique("nobody")}/budgets/request`, CONFIG, { body: { amount: 1, period: "day" } }), 404);
    await jsonOf(await adminCall("PUT", `/keys/zzzzzzzzzzzz/budgets/request`, CONFIG, { body: { amount: 1, period: "day" } }), 404);
    await jsonOf(await adminCall("GET", `/orgs/${unique("noorg")}/budgets`, CONFIG), 404);
  });

  it("lets the auditor read budgets but not write them", async () => {
    const tenant = unique("aud");
    await createTenant(CONFIG, tenant);
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, CONFIG, { body: { amount: 1, period: "day" }, token: AUDITOR_TOKEN }), 403);
    await jsonOf(await adminCall("GET", `/tenants/${tenant}/budgets`, CONFIG, { token: AUDITOR_TOKEN }), 200);
  });
});

describe("owners", () => {
  it("keeps a key's budget in its tenant's object and deletes it with the key", async () => {
    const tenant = unique("keyed");
    await createTenant(CONFIG, tenant);
    const key = await mintKey(CONFIG, tenant);
    const created = await jsonOf<Budget>(await adminCall("PUT", `/keys/${key.id}/budgets/tokens`, CONFIG, { body: { amount: 20_000, period: "day" } }), 201);
    expect(created.owner).toBe(`key:${key.id}`);
    const stub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
    expect((await stub.budgetList(`key:${key.id}`, Date.now())).map((b) => b.category)).toEqual(["tokens"]);
    await jsonOf(await adminCall("DELETE", `/keys/${key.id}`, CONFIG), 200);
    expect(await stub.budgetList(`key:${key.id}`, Date.now())).toEqual([]);
  });

  it("holds an org's budget in the org's object and deletes the budgets of a deleted tenant and org", async () => {
    const org = unique("bigco");
    const tenant = unique("member");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    await createTenant(CONFIG, tenant, { org });
    await jsonOf(await adminCall("PUT", `/orgs/${org}/budgets/request`, CONFIG, { body: { amount: 5_000_000, period: "month" } }), 201);
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, CONFIG, { body: { amount: 1000, period: "month" } }), 201);
    const orgStub = env.ORG_QUOTA.get(env.ORG_QUOTA.idFromName(org));
    const tenantStub = env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
    expect(await orgStub.budgetList(null, Date.now())).toHaveLength(1);
    await jsonOf(await adminCall("DELETE", `/tenants/${tenant}`, CONFIG), 200);
    expect(await tenantStub.budgetList(null, Date.now())).toEqual([]);
    await jsonOf(await adminCall("DELETE", `/orgs/${org}`, CONFIG), 200);
    expect(await orgStub.budgetList(null, Date.now())).toEqual([]);
  });

  it("describes every budget call in the OpenAPI document", async () => {
    const doc = await jsonOf<{ paths: Record<string, Record<string, unknown>>; components: { schemas: Record<string, unknown> } }>(await adminCall("GET", "/openapi.json", CONFIG), 200);
    for (const base of ["/tenants/{tenant}", "/keys/{id}", "/orgs/{org}"]) {
      expect(Object.keys(doc.paths[`${base}/budgets`]!)).toContain("get");
      expect(Object.keys(doc.paths[`${base}/budgets/{category}`]!)).toEqual(expect.arrayContaining(["get", "put", "delete"]));
      expect(Object.keys(doc.paths[`${base}/budgets/{category}/topups`]!)).toContain("post");
      expect(doc.paths[`${base}/budgets/{category}/topups`]!.post).toMatchObject({ parameters: [{ name: "Idempotency-Key", in: "header" }] });
    }
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(["Budget", "BudgetBody", "TopUpBody"]));
  });
});

describe("explain", () => {
  it("lists a key's budgets, its tenant's and its org's, with remaining and resets_at", async () => {
    const org = unique("exorg");
    const tenant = unique("extenant");
    await jsonOf(await adminCall("PUT", `/orgs/${org}`, CONFIG, { body: {} }), 201);
    await createTenant(CONFIG, tenant, { org });
    const key = await mintKey(CONFIG, tenant);
    const other = await mintKey(CONFIG, tenant);
    await jsonOf(await adminCall("PUT", `/keys/${key.id}/budgets/tokens`, CONFIG, { body: { amount: 1_000_000, period: "month" } }), 201);
    await jsonOf(await adminCall("PUT", `/keys/${other.id}/budgets/tokens`, CONFIG, { body: { amount: 5, period: "month" } }), 201);
    await jsonOf(await adminCall("PUT", `/tenants/${tenant}/budgets/request`, CONFIG, { body: { amount: 1000, period: "none" } }), 201);
    await jsonOf(await adminCall("PUT", `/orgs/${org}/budgets/tokens`, CONFIG, { body: { amount: 10_000_000, period: "month" } }), 201);
    const explained = await jsonOf<{ budgets: Budget[] }>(await adminCall("GET", `/callers/key:${key.id}`, CONFIG), 200);
    expect(explained.budgets.map((b) => [b.owner, b.category, b.remaining, b.resets_at === null])).toEqual([
      [`key:${key.id}`, "tokens", 1_000_000, false],
      [`tenant:${tenant}`, "request", 1000, true],
      [`org:${org}`, "tokens", 10_000_000, false],
    ]);
    const ofTenant = await jsonOf<{ budgets: Budget[] }>(await adminCall("GET", `/callers/tenant:${tenant}`, CONFIG), 200);
    expect(ofTenant.budgets.map((b) => b.owner)).toEqual([`tenant:${tenant}`, `org:${org}`]);
  });
});

// Budgets (calendar-period spend caps and prepaid credits) of keys, tenants
// and orgs: PUT, GET and DELETE /{owner}/budgets/{category}, GET
// /{owner}/budgets, POST /{owner}/budgets/{category}/topups.
//
// Where they live: the definition and the exact spend in the owner's quota
// Durable Object (the tenant's for tenant and key budgets, the org's for org
// budgets), which every reserve reads, so a change of amount holds at once
// in every isolate; and which categories are budgeted in the owner's D1 row
// (`budgets`), which the gateway reads with the cached key and tenant
// records, so a request that spends no budget costs no I/O. A write goes to
// the object first, then to D1 with its audit event: a D1 failure leaves a
// budget the gateway does not apply yet, and the retry completes it. A
// top-up is the exception: it has nothing in D1 but its audit event, so once
// the object has added it the answer says so, whatever D1 does, and
// `Idempotency-Key` makes a retry of it safe.
import type { Context, Hono } from "hono";
import { insertAuditEvent } from "../db/audit";
import { type BudgetOwnerKind, removeBudgetCategory, setBudgetCategory } from "../db/budgets";
import { database, type Db } from "../db/client";
import { getKey } from "../db/keys";
import { getOrg, tenantsOfOrg } from "../db/orgs";
import { getTenant } from "../db/tenants";
import { type BudgetPutResult, type BudgetState, type BudgetTopUpResult, MAX_IDEMPOTENCY_KEY_CHARS } from "../durable/budget-types";
import type { OrgQuota } from "../durable/org-quota";
import { callQuota } from "../durable/quota-client";
import type { TenantQuota } from "../durable/tenant-quota";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import { type Background, keepAlive } from "../utils/wait-until";
import type { AdminEnv } from "./admin-env";
import { presentBudget } from "./budget-reads";
import { budgetCategories, unknownCategory } from "./categories";
import { budgetBodySchema, topUpBodySchema } from "./budget-schemas";
import { keyNotFound, orgNotFound, tenantNotFound } from "./not-found";
import { orgStub } from "./org-sync";
import { CATEGORY_NAME, keyIdSchema, tenantSlugSchema } from "./schemas";
import { stored } from "./storage";
import { quotaStub } from "./usage";
import { invalid, jsonBody, pathParam } from "./validate";

/** Seconds an admin client should wait when a quota object did not answer. */
const BUDGET_RETRY_AFTER_S = 1;
/** Tenants of an org whose cached records one org budget write clears in this isolate (others within cache_ttl_s). */
const MAX_ORG_TENANTS_CLEARED = 500;
/** Waits before each retry of a landed top-up's audit event that D1 refused (about 20 s in all, within what waitUntil allows). */
const AUDIT_RETRY_DELAYS_MS: readonly number[] = [250, 1_000, 4_000, 15_000];
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/** A budget owner, found. */
interface Owner {
  kind: BudgetOwnerKind;
  id: string;
  /** `tenant:<slug>`, `key:<id>` or `org:<slug>`. */
  name: string;
  /** The tenant the audit events name (null for an org). */
  tenant: string | null;
  stub: BudgetStub;
}

type BudgetStub = DurableObjectStub<TenantQuota> | DurableObjectStub<OrgQuota>;

/** The top-up's Idempotency-Key: absent, or 1 to MAX_IDEMPOTENCY_KEY_CHARS visible ASCII characters (a quoted string, as the IETF draft spells it, is read without its quotes). */
function idempotencyKeyOf(c: Context<AdminEnv>): { ok: true; value: string | undefined } | { ok: false; response: Response } {
  const raw = c.req.header("idempotency-key");
  if (raw === undefined) return { ok: true, value: undefined };
  let value = raw.trim();
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
  if (value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY_CHARS || !VISIBLE_ASCII.test(value)) {
    return { ok: false, response: invalid("Idempotency-Key", `must be 1 to ${MAX_IDEMPOTENCY_KEY_CHARS} visible ASCII characters`) };
  }
  return { ok: true, value };
}

/**
 * Writes a landed top-up's audit event. The credits are added already, so a
 * D1 failure is no reason to answer "retry" (a retry without an
 * Idempotency-Key would add them twice): the first attempt is awaited, and
 * when it fails the write is retried in the background, and logged (by
 * error name only) if it never lands.
 */
async function auditLanded(c: Context<AdminEnv>, write: () => Promise<unknown>): Promise<void> {
  try {
    await write();
    return;
  } catch (error) {
    log.warn("budget_topup_audit_retrying", { error: errorName(error) });
  }
  keepAlive(
    backgroundOf(c),
    (async () => {
      let last: unknown = null;
      for (const delayMs of AUDIT_RETRY_DELAYS_MS) {
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        try {
          await write();
          return;
        } catch (error) {
          last = error;
        }
      }
      log.error("budget_topup_audit_failed", { error: errorName(last) });
    })(),
  );
}

/** The request's execution context, or null where there is none (hono throws on reading a missing one). */
function backgroundOf(c: Context<AdminEnv>): Background | null {
  try {
    return c.executionCtx;
  } catch {
    return null;
  }
}

function budgetUnavailable(detail: string): Response {
  return problem("budget_unavailable", { detail, headers: { "retry-after": String(BUDGET_RETRY_AFTER_S) } });
}

type Found = { ok: true; owner: Owner } | { ok: false; response: Response };

async function findOwner(c: Context<AdminEnv>, kind: BudgetOwnerKind): Promise<Found> {
  const db = database(c.env.DB);
  switch (kind) {
    case "tenant": {
      const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
      if (!slug.ok) return slug;
      if ((await stored(() => getTenant(db, slug.value))) === null) return { ok: false, response: tenantNotFound(slug.value) };
      return { ok: true, owner: { kind, id: slug.value, name: `tenant:${slug.value}`, tenant: slug.value, stub: quotaStub(c.env, slug.value) } };
    }
    case "key": {
      const id = pathParam(keyIdSchema, c.req.param("id"), "id");
      if (!id.ok) return id;
      const key = await stored(() => getKey(db, id.value));
      if (key === null) return { ok: false, response: keyNotFound(id.value) };
      return { ok: true, owner: { kind, id: id.value, name: `key:${id.value}`, tenant: key.tenant, stub: quotaStub(c.env, key.tenant) } };
    }
    case "org": {
      const slug = pathParam(tenantSlugSchema, c.req.param("org"), "org");
      if (!slug.ok) return slug;
      if ((await stored(() => getOrg(db, slug.value))) === null) return { ok: false, response: orgNotFound(slug.value) };
      return { ok: true, owner: { kind, id: slug.value, name: `org:${slug.value}`, tenant: null, stub: orgStub(c.env, slug.value) } };
    }
  }
}

type Category = { ok: true; value: string } | { ok: false; response: Response };

function categoryOf(c: Context<AdminEnv>): Category {
  const category = c.req.param("category") ?? "";
  if (!CATEGORY_NAME.test(category)) return { ok: false, response: invalid("category", "category names match ^[a-z][a-z0-9_]{0,31}$") };
  const known = budgetCategories(c.get("config"));
  if (!known.has(category)) return { ok: false, response: unknownCategory("category", category, known) };
  return { ok: true, value: category };
}

/** The owner's budgets now, or null when its object does not answer. */
async function listOf(owner: Owner): Promise<BudgetState[] | null> {
  try {
    return await callQuota(async (): Promise<BudgetState[]> => owner.stub.budgetList(owner.name, Date.now()));
  } catch (error) {
    log.error("budget_read_failed", { error: errorName(error) });
    return null;
  }
}

/** Forgets this isolate's cached records that carry the owner's budgets. */
async function clearCached(c: Context<AdminEnv>, db: Db, owner: Owner): Promise<void> {
  const runtime = c.get("runtime");
  // A refusal this isolate remembers for the owner's budgets no longer holds.
  runtime.budgetRefusals.forgetOwner(owner.name);
  // Its leases here end (their unspent units go back with the next call to the object): a deleted budget is not spent from them.
  runtime.budgetLeases.book.dropOwner(owner.name);
  if (owner.kind === "key") runtime.keys.clearKeyId(owner.id);
  else if (owner.kind === "tenant") {
    runtime.keys.clearTenant(owner.id);
    runtime.tenants.clear(owner.id);
  } else {
    for (const tenant of await stored(() => tenantsOfOrg(db, owner.id, MAX_ORG_TENANTS_CLEARED))) {
      runtime.keys.clearTenant(tenant);
      runtime.tenants.clear(tenant);
    }
  }
}

function registerFor(app: Hono<AdminEnv>, kind: BudgetOwnerKind, base: string): void {
  app.get(`${base}/budgets`, async (c) => {
    const found = await findOwner(c, kind);
    if (!found.ok) return found.response;
    const budgets = await listOf(found.owner);
    if (budgets === null) return budgetUnavailable("The budgets could not be read.");
    return c.json({ owner: found.owner.name, budgets: budgets.map(presentBudget) });
  });

  app.get(`${base}/budgets/:category`, async (c) => {
    const found = await findOwner(c, kind);
    if (!found.ok) return found.response;
    const category = categoryOf(c);
    if (!category.ok) return category.response;
    const budgets = await listOf(found.owner);
    if (budgets === null) return budgetUnavailable("The budget could not be read.");
    const budget = budgets.find((b) => b.category === category.value);
    if (budget === undefined) return problem("not_found", { detail: `${found.owner.name} has no ${category.value} budget.` });
    return c.json(presentBudget(budget));
  });

  app.put(`${base}/budgets/:category`, async (c) => {
    const found = await findOwner(c, kind);
    if (!found.ok) return found.response;
    const owner = found.owner;
    const category = categoryOf(c);
    if (!category.ok) return category.response;
    const body = await jsonBody(c, budgetBodySchema);
    if (!body.ok) return body.response;
    const nowMs = Date.now();
    const { amount, period, thresholds, shadow } = body.value;
    let result: BudgetPutResult;
    try {
      result = await callQuota(async (): Promise<BudgetPutResult> => owner.stub.budgetPut({ owner: owner.name, category: category.value, amount, period, nowMs, ...(thresholds === undefined ? {} : { thresholds }), ...(shadow === undefined ? {} : { shadow }) }));
    } catch (error) {
      log.error("budget_write_failed", { error: errorName(error) });
      return budgetUnavailable("The budget could not be written; nothing was changed.");
    }
    const db = database(c.env.DB);
    const budget = presentBudget(result.budget);
    await stored(() =>
      db.batch([
        setBudgetCategory(db, owner.kind, owner.id, category.value, period),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: result.created ? "budget_created" : "budget_replaced",
          actor: "admin",
          tenant: owner.tenant,
          subject: owner.name,
          detail: { category: category.value, amount, period, thresholds: result.budget.thresholds, shadow: budget.shadow, previous: result.previous === null ? null : presentBudget(result.previous) },
        }),
      ]),
    );
    await clearCached(c, db, owner);
    return c.json(budget, result.created ? 201 : 200);
  });

  app.delete(`${base}/budgets/:category`, async (c) => {
    const found = await findOwner(c, kind);
    if (!found.ok) return found.response;
    const owner = found.owner;
    const category = categoryOf(c);
    if (!category.ok) return category.response;
    let deleted: boolean;
    try {
      deleted = await callQuota(async (): Promise<boolean> => owner.stub.budgetDelete(owner.name, category.value));
    } catch (error) {
      log.error("budget_write_failed", { error: errorName(error) });
      return budgetUnavailable("The budget could not be deleted; nothing was changed.");
    }
    const db = database(c.env.DB);
    const nowMs = Date.now();
    // Also when the object had none: the D1 mark may be left from a write whose object call failed.
    await stored(() =>
      db.batch([
        removeBudgetCategory(db, owner.kind, owner.id, category.value),
        ...(deleted ? [insertAuditEvent(db, { atMs: nowMs, kind: "budget_deleted", actor: "admin", tenant: owner.tenant, subject: owner.name, detail: { category: category.value } })] : []),
      ] as [ReturnType<typeof removeBudgetCategory>]),
    );
    await clearCached(c, db, owner);
    if (!deleted) return problem("not_found", { detail: `${owner.name} has no ${category.value} budget.` });
    return c.json({ owner: owner.name, category: category.value, deleted: true });
  });

  app.post(`${base}/budgets/:category/topups`, async (c) => {
    const found = await findOwner(c, kind);
    if (!found.ok) return found.response;
    const owner = found.owner;
    const category = categoryOf(c);
    if (!category.ok) return category.response;
    const body = await jsonBody(c, topUpBodySchema);
    if (!body.ok) return body.response;
    const key = idempotencyKeyOf(c);
    if (!key.ok) return key.response;
    const nowMs = Date.now();
    let result: BudgetTopUpResult;
    try {
      result = await callQuota(async (): Promise<BudgetTopUpResult> =>
        owner.stub.budgetTopUp({ owner: owner.name, category: category.value, amount: body.value.amount, nowMs, ...(key.value === undefined ? {} : { idempotencyKey: key.value }) }),
      );
    } catch (error) {
      log.error("budget_write_failed", { error: errorName(error) });
      // The object may have added the credits before its answer was lost.
      return budgetUnavailable(key.value === undefined ? "The top-up could not be confirmed: read the budget before sending it again, or send it with an Idempotency-Key." : "The top-up could not be confirmed: send it again with the same Idempotency-Key.");
    }
    if (result.status === "not_found") return problem("not_found", { detail: `${owner.name} has no ${category.value} budget.` });
    if (result.status === "periodic") return invalid("category", `the ${category.value} budget of ${owner.name} resets every ${result.budget.period}: only credits (period none) take top-ups; PUT a new amount instead`);
    if (result.status === "key_reused") {
      return problem("conflict", {
        detail: `This Idempotency-Key was given to another top-up of ${owner.name} in the last 24 hours; nothing was added.`,
        hint: "Send a new Idempotency-Key for a new top-up; repeat a top-up only with the category and amount it was first sent with.",
      });
    }
    // A refusal this isolate remembers for the owner's budgets no longer holds (others see the top-up within budgets.exhausted_cache_s).
    c.get("runtime").budgetRefusals.forgetOwner(owner.name);
    const budget = presentBudget(result.budget);
    // A repeat answers as the first did; the first wrote (or is still writing) the audit event.
    if (result.replayed) return c.json(budget, 201, { "idempotent-replayed": "true" });
    const db = database(c.env.DB);
    await auditLanded(c, () =>
      insertAuditEvent(db, {
        atMs: nowMs,
        kind: "budget_topup",
        actor: "admin",
        tenant: owner.tenant,
        subject: owner.name,
        detail: { category: category.value, amount: body.value.amount, reason: body.value.reason ?? null, new_amount: result.budget.amount },
      }).run(),
    );
    return c.json(budget, 201);
  });
}

export function registerBudgetRoutes(app: Hono<AdminEnv>): void {
  registerFor(app, "tenant", "/tenants/:tenant");
  registerFor(app, "key", "/keys/:id");
  registerFor(app, "org", "/orgs/:org");
}


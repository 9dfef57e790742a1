// Budgets read and removed on behalf of other admin calls: the spelling of a
// budget in answers, the budgets explain lists for a caller, and the purge
// that deleting a key, tenant or org does. The budget calls themselves are
// budgets.ts.
import type { Bindings } from "../exchange";
import type { Db } from "../db/client";
import { getTenant } from "../db/tenants";
import type { BudgetState } from "../durable/budget-types";
import { callQuota } from "../durable/quota-client";
import { errorName, log } from "../log/logger";
import { orgStub } from "./org-sync";
import { stored } from "./storage";
import { quotaStub } from "./usage";

/** The spelling of a budget in answers. */
export function presentBudget(b: BudgetState) {
  return {
    owner: b.owner,
    category: b.category,
    period: b.period,
    amount: b.amount,
    used: b.used,
    remaining: b.remaining,
    // Units isolates hold in leases: counted in `used` from the grant, not yet reported spent.
    leased: b.leased ?? 0,
    thresholds: b.thresholds,
    shadow: b.shadow === true,
    period_start: b.periodStartMs === null ? null : new Date(b.periodStartMs).toISOString(),
    resets_at: b.resetsAtMs === null ? null : new Date(b.resetsAtMs).toISOString(),
  };
}

/**
 * Deletes the budgets held for a deleted key, tenant (with its keys') or
 * org; null purges every budget of the object. A failure is logged: the
 * owner is gone from D1, so nothing applies them any more.
 */
export async function purgeBudgets(env: Bindings, where: { tenant: string; owner: string | null } | { org: string }): Promise<void> {
  try {
    if ("org" in where) await callQuota(async (): Promise<number> => orgStub(env, where.org).budgetPurge(null));
    else await callQuota(async (): Promise<number> => quotaStub(env, where.tenant).budgetPurge(where.owner));
  } catch (error) {
    log.error("budget_purge_failed", { error: errorName(error) });
  }
}

/**
 * The budgets that apply to a caller, for explain: a key's own, its
 * tenant's and the tenant's org's (a tenant: its own and its org's), with
 * `remaining` and `resets_at`. Null when a quota object does not answer.
 */
export async function callerBudgets(env: Bindings, db: Db, callerKey: string, tenant: string | null): Promise<ReturnType<typeof presentBudget>[] | null> {
  if (tenant === null) return [];
  const row = await stored(() => getTenant(db, tenant));
  const org = row?.org ?? null;
  const owners = new Set([`tenant:${tenant}`]);
  if (callerKey.startsWith("key:")) owners.add(callerKey);
  try {
    const nowMs = Date.now();
    const own = await callQuota(async (): Promise<BudgetState[]> => quotaStub(env, tenant).budgetList(null, nowMs));
    const orgs = org === null ? [] : await callQuota(async (): Promise<BudgetState[]> => orgStub(env, org).budgetList(`org:${org}`, nowMs));
    return [...own.filter((b) => owners.has(b.owner)), ...orgs].map(presentBudget);
  } catch (error) {
    log.error("budget_read_failed", { error: errorName(error) });
    return null;
  }
}

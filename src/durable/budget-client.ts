// The edge's side of the budget protocol, in one place: which quota object
// holds which spends, in which order they are asked, and what each answer
// means. Returns tagged outcomes and never throws for a refusal or an object
// that does not answer; src/limits/budget.ts maps them to answers.
//
// A request: the key's and tenant's spends reserve in the tenant's
// TenantQuota (one round trip), then the org's in its OrgQuota (a second);
// an org refusal releases the tenant's reservation. After the answer, a
// response-priced category settles its actual cost at both; a request
// refused after its reserve (by a later step) releases it.
import { errorName, log } from "../log/logger";
import type { BudgetLeaseAccuracyReport } from "./budget-lease-accuracy";
import type { BudgetAdjustRequest, BudgetLeaseRequest, BudgetLeaseResult } from "./budget-lease-types";
import type { BudgetReserveResult, BudgetSettleResult, BudgetSpend, BudgetState, BudgetThresholdAudit } from "./budget-types";
import type { OrgQuota } from "./org-quota";
import { callQuota } from "./quota-client";
import type { TenantQuota } from "./tenant-quota";

export interface BudgetNamespaces {
  tenant: DurableObjectNamespace<TenantQuota>;
  org: DurableObjectNamespace<OrgQuota>;
}

/** The spends of one request, by the object that holds their budgets. */
export interface BudgetPlan {
  /** The tenant whose object holds `tenantSpends` (key and tenant budgets). */
  tenant: string;
  tenantSpends: BudgetSpend[];
  /** The org whose object holds `orgSpends`, or null. */
  org: string | null;
  orgSpends: BudgetSpend[];
}

/** What a settlement needs; kept from the reserve until the answer. */
export interface BudgetTicket {
  readonly reservationId: string;
  /** Null where nothing was reserved. */
  readonly tenant: string | null;
  readonly org: string | null;
  /** Every category reserved, for a release. */
  readonly categories: readonly string[];
  /** The spends recorded (those whose budget exists), for metering. */
  readonly charged: readonly BudgetSpend[];
}

/**
 * - `reserved`: forward; keep the ticket. `wouldRefuse` (only with `force`,
 *   shadow mode) is the budget that would have refused; the spend was recorded anyway.
 *   `shadows` (only with `force`): the shadow budgets charged past their room.
 * - `exhausted`: refuse; nothing is held.
 * - `unavailable`: an object (`tenant:<slug>` or `org:<slug>`) did not
 *   answer; nothing is held (a release that cannot be delivered is logged,
 *   and the reserve stands).
 */
export type BudgetReserveOutcome =
  | { kind: "reserved"; ticket: BudgetTicket; wouldRefuse: BudgetState | null; shadows: BudgetState[]; audits: BudgetThresholdAudit[] }
  | { kind: "exhausted"; budget: BudgetState; audits: BudgetThresholdAudit[] }
  | { kind: "unavailable"; object: string };

export async function reserveBudgets(ns: BudgetNamespaces, plan: BudgetPlan, nowMs: number, force: boolean): Promise<BudgetReserveOutcome> {
  const reservationId = crypto.randomUUID();
  const categories = [...new Set([...plan.tenantSpends, ...plan.orgSpends].map((s) => s.category))];
  const audits: BudgetThresholdAudit[] = [];
  let wouldRefuse: BudgetState | null = null;
  const shadows: BudgetState[] = [];
  const charged: BudgetSpend[] = [];
  let tenantHeld = false;
  if (plan.tenantSpends.length > 0) {
    let r: BudgetReserveResult;
    try {
      r = await callQuota(async (): Promise<BudgetReserveResult> => tenantStub(ns, plan.tenant).budgetReserve({ reservationId, spends: plan.tenantSpends, nowMs, force }));
    } catch (err) {
      log.error("budget_reserve_failed", { scope: "tenant", error: errorName(err) });
      return { kind: "unavailable", object: `tenant:${plan.tenant}` };
    }
    if (r.status === "exhausted") return { kind: "exhausted", budget: r.budget, audits };
    audits.push(...r.audits);
    wouldRefuse = r.exhausted;
    shadows.push(...(r.shadows ?? []));
    tenantHeld = r.budgets.length > 0;
    charged.push(...chargedOf(plan.tenantSpends, r.budgets));
  }
  let orgHeld = false;
  if (plan.org !== null && plan.orgSpends.length > 0) {
    const org = plan.org;
    const release = (): Promise<void> => (tenantHeld ? settleBudgets(ns, { reservationId, tenant: plan.tenant, org: null, categories, charged }, categories.map((category) => ({ category, units: 0 })), nowMs).then(() => {}) : Promise.resolve());
    let r: BudgetReserveResult;
    try {
      r = await callQuota(async (): Promise<BudgetReserveResult> => orgStub(ns, org).budgetReserve({ reservationId, spends: plan.orgSpends, nowMs, force }));
    } catch (err) {
      log.error("budget_reserve_failed", { scope: "org", error: errorName(err) });
      await release();
      return { kind: "unavailable", object: `org:${org}` };
    }
    if (r.status === "exhausted") {
      await release();
      return { kind: "exhausted", budget: r.budget, audits };
    }
    audits.push(...r.audits);
    wouldRefuse ??= r.exhausted;
    shadows.push(...(r.shadows ?? []));
    orgHeld = r.budgets.length > 0;
    charged.push(...chargedOf(plan.orgSpends, r.budgets));
  }
  const ticket: BudgetTicket = { reservationId, tenant: tenantHeld ? plan.tenant : null, org: orgHeld ? plan.org : null, categories, charged };
  return { kind: "reserved", ticket, wouldRefuse, shadows, audits };
}

/**
 * Replaces the reserve of each listed category by its actual units at every
 * object holding the ticket (all zeros: a release). Never throws; returns
 * the threshold audits to record.
 */
export async function settleBudgets(ns: BudgetNamespaces, ticket: BudgetTicket, actual: { category: string; units: number }[], nowMs: number): Promise<BudgetThresholdAudit[]> {
  const calls: Promise<BudgetSettleResult | null>[] = [];
  const one = (scope: string, call: () => Promise<BudgetSettleResult>) =>
    callQuota(call).catch((err: unknown) => {
      // The reserve stands: a spend is never left uncounted.
      log.error("budget_settle_failed", { scope, error: errorName(err) });
      return null;
    });
  const { tenant, org } = ticket;
  if (tenant !== null) calls.push(one("tenant", async (): Promise<BudgetSettleResult> => tenantStub(ns, tenant).budgetSettle({ reservationId: ticket.reservationId, actual, nowMs })));
  if (org !== null) calls.push(one("org", async (): Promise<BudgetSettleResult> => orgStub(ns, org).budgetSettle({ reservationId: ticket.reservationId, actual, nowMs })));
  const results = await Promise.all(calls);
  return results.flatMap((r) => r?.audits ?? []);
}

/** The spends whose budget the object recorded them in. */
function chargedOf(spends: readonly BudgetSpend[], budgets: readonly BudgetState[]): BudgetSpend[] {
  return spends.filter((s) => budgets.some((b) => b.owner === s.owner && b.category === s.category));
}

function tenantStub(ns: BudgetNamespaces, tenant: string): DurableObjectStub<TenantQuota> {
  return ns.tenant.get(ns.tenant.idFromName(tenant));
}

function orgStub(ns: BudgetNamespaces, org: string): DurableObjectStub<OrgQuota> {
  return ns.org.get(ns.org.idFromName(org));
}

/** The stub of a budget object by its name: `tenant:<slug>` (TenantQuota) or `org:<slug>` (OrgQuota). */
function budgetStub(ns: BudgetNamespaces, object: string): DurableObjectStub<TenantQuota> | DurableObjectStub<OrgQuota> {
  return object.startsWith("org:") ? orgStub(ns, object.slice("org:".length)) : tenantStub(ns, object.slice("tenant:".length));
}

/** One lease call to a budget object (src/durable/budget-lease-store.ts). Throws when the object does not answer. */
export function leaseBudgets(ns: BudgetNamespaces, object: string, req: BudgetLeaseRequest): Promise<BudgetLeaseResult> {
  const stub = budgetStub(ns, object);
  return callQuota(async (): Promise<BudgetLeaseResult> => stub.budgetLease(req));
}

/** A budget object's lease grants and refusals since `sinceMs`, and what its budgets hold now (GET /global/accuracy). Throws when the object does not answer. */
export function budgetLeaseAccuracyOf(ns: BudgetNamespaces, object: string, sinceMs: number, nowMs: number): Promise<BudgetLeaseAccuracyReport> {
  const stub = budgetStub(ns, object);
  return callQuota(async (): Promise<BudgetLeaseAccuracyReport> => stub.budgetLeaseAccuracy({ sinceMs: Math.floor(sinceMs), nowMs: Math.floor(nowMs) }));
}

/** Debts past a lease and refunds after one closed, at a budget object. Throws when the object does not answer. */
export function adjustBudgets(ns: BudgetNamespaces, object: string, req: BudgetAdjustRequest): Promise<BudgetThresholdAudit[]> {
  const stub = budgetStub(ns, object);
  return callQuota(async (): Promise<BudgetThresholdAudit[]> => stub.budgetAdjust(req));
}

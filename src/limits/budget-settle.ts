// What a request's budget spend becomes once its outcome is known: given
// back when it was not forwarded (a later step refused it, or it failed),
// replaced by a response-priced category's actual cost (a refund below the
// reserve, a debt above it; a reserve of 0 settles its whole cost as debt),
// or reduced by a charge_on_status charge whose status did not match.
//
// A spend taken from a lease goes back to that lease while it lives (no
// call), else to its object as a refund in the lease's period; a debt comes
// from the lease while it has units, the rest is charged at the object. A
// shadow-mode reservation settles at the objects as before.
import type { Exchange } from "../exchange";
import { type BudgetNamespaces, settleBudgets } from "../durable/budget-client";
import type { BudgetSpend } from "../durable/budget-types";
import type { CostResult } from "../proxy/response-cost-result";
import { keepAlive } from "../utils/wait-until";
import { recordBudgetAudits } from "./budget-answers";
import { REQUEST_CATEGORY } from "./rate-limit";

function namespaces(x: Exchange): BudgetNamespaces {
  return { tenant: x.env.TENANT_QUOTA, org: x.env.ORG_QUOTA };
}

/**
 * Adds each spend to its tenant's month as `budget:<owner>:<category>` (the
 * metering export's spend per budget and period); an org's budget is metered
 * under each of its tenants, so the org's spend is their sum.
 */
export function meterBudgets(x: Exchange, spends: readonly BudgetSpend[], delta: (s: BudgetSpend) => number, nowMs: number): void {
  const tenant = x.tenant;
  if (tenant === null) return;
  for (const s of spends) x.runtime.meter.add(tenant.slug, `budget:${s.owner}:${s.category}`, delta(s), nowMs, x.config.usageMaxPending);
}

/**
 * Changes what the request spent of `category` in each of its budgets by
 * `delta` units (> 0: a debt; < 0: a refund), metered alike. `reservedUnits`
 * is what its shadow-mode reservation holds of the category (it is replaced
 * by reservedUnits + delta).
 */
function changeSpend(x: Exchange, category: string, delta: number, reservedUnits: number): void {
  const hold = x.budget;
  if (hold === null || delta === 0) return;
  const nowMs = x.runtime.now();
  if (hold.kind === "reserved") {
    const ticket = hold.ticket;
    if (!ticket.categories.includes(category)) return;
    meterBudgets(x, ticket.charged.filter((s) => s.category === category), () => delta, nowMs);
    const units = Math.max(0, reservedUnits + delta);
    keepAlive(x.ctx, settleBudgets(namespaces(x), ticket, [{ category, units }], nowMs).then((audits) => recordBudgetAudits(x, audits)));
    return;
  }
  const leases = x.runtime.budgetLeases;
  const ns = namespaces(x);
  for (const debit of hold.debits) {
    if (debit.slot.category !== category) continue;
    meterBudgets(x, [{ owner: debit.slot.owner, category, units: delta }], (s) => s.units, nowMs);
    if (delta > 0) leases.charge(ns, x.ctx, debit, delta, nowMs);
    else leases.giveBack(ns, x.ctx, debit, Math.min(-delta, debit.units), nowMs);
  }
}

/** Gives back what the request holds of its budgets: it was not forwarded (a later step refused it, or it failed). */
export function releaseBudget(x: Exchange): void {
  const hold = x.budget;
  if (hold === null) return;
  x.budget = null;
  const nowMs = x.runtime.now();
  if (hold.kind === "reserved") {
    const ticket = hold.ticket;
    meterBudgets(x, ticket.charged, (s) => -s.units, nowMs);
    keepAlive(x.ctx, settleBudgets(namespaces(x), ticket, ticket.categories.map((category) => ({ category, units: 0 })), nowMs));
    return;
  }
  meterBudgets(x, hold.spends, (s) => -s.units, nowMs);
  const leases = x.runtime.budgetLeases;
  const ns = namespaces(x);
  for (const debit of hold.debits) leases.giveBack(ns, x.ctx, debit, debit.units, nowMs);
}

/** The route's charge of `category` (0 when it charges none). */
function routeChargeOf(x: Exchange, category: string): number {
  return x.route?.charges.find(([c]) => c === category)?.[1] ?? 0;
}

/** What the request spent of `category` before any settlement: its request unit, its route's charge, the reserve. */
function baseUnits(x: Exchange, category: string, reserveUnits: number): number {
  return (category === REQUEST_CATEGORY ? 1 : 0) + routeChargeOf(x, category) + reserveUnits;
}

/**
 * Settles a response-priced category's actual cost against its reserve in
 * the budgets (refund or debt; a reserve of 0 settles its whole cost as
 * debt), in the background. A charge_on_status route whose status did not
 * match has its charge of that category taken off here too (one settlement
 * per category and request).
 */
export function settleBudgetCost(x: Exchange, category: string, reserveUnits: number, result: CostResult): void {
  const givenBack = x.statusChargeReturned ? routeChargeOf(x, category) : 0;
  const cost = result.found ? result.cost : reserveUnits;
  changeSpend(x, category, cost - reserveUnits - givenBack, baseUnits(x, category, reserveUnits));
}

/**
 * Gives back `units` of `category` from the request's budgets: a
 * charge_on_status charge whose status did not match. A response-priced
 * category is left to its own settlement (settleBudgetCost), which takes
 * this off with its cost.
 */
export function refundBudgetUnits(x: Exchange, category: string, units: number): void {
  if (units === 0) return;
  if (x.priced !== null && x.priced.charge.category === category) return;
  changeSpend(x, category, -units, baseUnits(x, category, 0));
}

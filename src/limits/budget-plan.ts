// Which budgets a request spends from, and how much of each category: known
// from the cached key and tenant records (the categories each owner has a
// budget of), so a request that spends no budgeted category is found
// without I/O.
import type { Exchange } from "../exchange";
import type { BudgetPlan } from "../durable/budget-client";
import type { BudgetSpend } from "../durable/budget-types";
import type { ResponseCharge } from "../proxy/response-cost-spec";
import { REQUEST_CATEGORY } from "./rate-limit";

/** The units this request spends per category, and the response-priced category (spent even with a reserve of 0), if any. */
function unitsOf(x: Exchange, responseCharges: readonly (ResponseCharge | null)[]): { units: Map<string, number>; priced: string | null } {
  const units = new Map<string, number>([[REQUEST_CATEGORY, 1]]);
  const route = x.route;
  if (route === null) return { units, priced: null };
  for (const [category, cost] of route.charges) units.set(category, (units.get(category) ?? 0) + cost);
  // A WebSocket upgrade pays its route's reserve too, as in the rate limits.
  const priced = responseCharges[route.index] ?? null;
  if (priced !== null) units.set(priced.category, (units.get(priced.category) ?? 0) + priced.reserve);
  return { units, priced: priced?.category ?? null };
}

/** The request's spends by object, or null when it spends no budgeted category (no call to make). */
export function budgetPlanOf(x: Exchange, responseCharges: readonly (ResponseCharge | null)[]): BudgetPlan | null {
  const caller = x.caller;
  if (caller.kind === "anonymous") return null;
  const tenant = caller.tenant;
  if (tenant === null) return null;
  const keyBudgets = caller.kind === "key" ? (caller.keyBudgets ?? null) : null;
  const tenantBudgets = tenant.budgets ?? null;
  const orgBudgets = tenant.org === null ? null : (tenant.orgBudgets ?? null);
  if (keyBudgets === null && tenantBudgets === null && orgBudgets === null) return null;
  const tenantSpends: BudgetSpend[] = [];
  const orgSpends: BudgetSpend[] = [];
  const { units: spent, priced } = unitsOf(x, responseCharges);
  for (const [category, units] of spent) {
    // A category charged 0 spends nothing; a response-priced one is a spend whatever its reserve (its cost settles as debt).
    if (units === 0 && category !== priced) continue;
    if (keyBudgets?.has(category) === true && caller.kind === "key") tenantSpends.push({ owner: `key:${caller.keyId}`, category, units });
    if (tenantBudgets?.has(category) === true) tenantSpends.push({ owner: `tenant:${tenant.slug}`, category, units });
    if (orgBudgets?.has(category) === true) orgSpends.push({ owner: `org:${tenant.org!.slug}`, category, units });
  }
  if (tenantSpends.length === 0 && orgSpends.length === 0) return null;
  return { tenant: tenant.slug, tenantSpends, org: tenant.org?.slug ?? null, orgSpends };
}


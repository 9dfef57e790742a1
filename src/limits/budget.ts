// The budget step: after the rate limits admit a request, every unit it
// spends of a budgeted category (its `request` unit, its route's charges, a
// response-priced reserve) is reserved from each budget of that category
// that applies — the key's, its tenant's, the tenant's org's — in the quota
// objects (src/durable/budget-client.ts), before anything is forwarded.
//
// Which budgets apply is known from the cached key and tenant records: a
// request that spends no budgeted category makes no call at all. All or
// nothing with the rate limits: a budget refusal (or an object that cannot
// answer) gives the rate-limit charges back, as a rate-limit denial charges
// nothing. A request refused by a later step releases its reserve; a
// response-priced category settles its actual cost after the answer (refund
// below the reserve, debt above it) — a reserve of 0 too: it is still a
// budgeted spend, refused once the budget is spent and settled as debt. A
// charge_on_status route's charges go back when the status does not match.
// Shadow mode records every spend, even past the amount, and marks the
// answer `Tollgate-Shadow`.
//
// Since a refusal gives the rate-limit charge back, no rate limit stops a
// caller whose budget is spent: the isolate remembers the refusal
// (src/cache/budget-refusals.ts) and refuses that budget without an object
// call for a few seconds, and leaves an object that failed alone for one.
import { alertAbout } from "../alerts/raise";
import type { Exchange } from "../exchange";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import type { BudgetRefusals } from "../cache/budget-refusals";
import { type BudgetNamespaces, type BudgetPlan, type BudgetTicket, reserveBudgets, settleBudgets } from "../durable/budget-client";
import type { BudgetSpend, BudgetState, BudgetThresholdAudit } from "../durable/budget-types";
import { budgetHeaders, type HeaderList } from "../engine/rate-limit-headers";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import { refund, type SettleCharge } from "../proxy/response-cost-gcra";
import type { CostResult } from "../proxy/response-cost-result";
import type { ResponseCharge } from "../proxy/response-cost-spec";
import { keepAlive } from "../utils/wait-until";
import type { Check } from "./check";
import { REQUEST_CATEGORY } from "./rate-limit";

/** Seconds a client is told to wait when a budget cannot be checked. */
export const BUDGET_UNAVAILABLE_RETRY_AFTER_S = 1;

export interface BudgetOptions {
  /** Each route's response_charge, by route index (its reserve spends budgets too). */
  readonly responseCharges: readonly (ResponseCharge | null)[];
  /** The runtime's clock: periods roll over by it. */
  readonly now: () => number;
  /** The isolate's memory of budgets that refused and objects that failed (the runtime's). */
  readonly refusals: BudgetRefusals;
}

function namespaces(x: Exchange): BudgetNamespaces {
  return { tenant: x.env.TENANT_QUOTA, org: x.env.ORG_QUOTA };
}

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

/** The `budget` member of a refusal. */
function budgetMember(b: BudgetState): Record<string, unknown> {
  return { owner: b.owner, period: b.period, amount: b.amount, used: b.used, resets_at: b.resetsAtMs === null ? null : new Date(b.resetsAtMs).toISOString() };
}

/** The RateLimit headers of a budget's refusal: the budget, with nothing left until it resets. */
function refusalHeaders(x: Exchange, b: BudgetState, nowMs: number, cost: number): HeaderList {
  const ownerKind = b.owner.slice(0, Math.max(0, b.owner.indexOf(":")));
  const periodS = b.periodStartMs === null || b.resetsAtMs === null ? null : Math.round((b.resetsAtMs - b.periodStartMs) / 1000);
  const resetS = b.resetsAtMs === null ? null : Math.max(1, Math.ceil((b.resetsAtMs - nowMs) / 1000));
  return budgetHeaders({ category: b.category, ownerKind, period: b.period, amount: b.amount, periodS, resetS, cost }, x.config.rateLimitHeaders);
}

/** 429 budget_exhausted (Retry-After until the reset) or, for credits, 402 credits_exhausted. */
export function budgetRefusal(b: BudgetState, nowMs: number): { code: "budget_exhausted" | "credits_exhausted"; response: Response } {
  const extras = { category: b.category, budget: budgetMember(b) };
  if (b.resetsAtMs === null) {
    return {
      code: "credits_exhausted",
      response: problem("credits_exhausted", { detail: `The ${b.category} credits of ${b.owner} are spent (${b.used} of ${b.amount}).`, extras }),
    };
  }
  const retryAfterS = Math.max(1, Math.ceil((b.resetsAtMs - nowMs) / 1000));
  return {
    code: "budget_exhausted",
    response: problem("budget_exhausted", {
      detail: `The ${b.category} budget of ${b.owner} for this ${b.period} is spent (${b.used} of ${b.amount}); it resets at ${new Date(b.resetsAtMs).toISOString()}.`,
      extras,
      headers: { "retry-after": String(retryAfterS) },
    }),
  };
}

/** Gives back what the rate-limit step charged this request (isolate limits at once, global ones through their ledger). */
export function refundRateLimits(x: Exchange, nowMs: number): void {
  const charged = x.charged;
  if (charged === null) return;
  x.charged = null;
  const { limiter, leases } = x.runtime;
  const local: SettleCharge[] = [];
  for (const c of charged) {
    if (c.cost === 0 || c.limits.length === 0) continue;
    const global = c.limits.filter((l) => l.scope === "global");
    if (global.length > 0) leases.settle(x.env.LIMIT_LEDGER, x.ctx, limiter, { subject: c.subject, category: c.category, limits: global, kind: "refund", units: c.cost }, nowMs);
    local.push({ subject: c.subject, category: c.category, limits: global.length > 0 ? c.limits.filter((l) => l.scope !== "global") : c.limits, units: c.cost });
  }
  refund(limiter, local, nowMs);
}

/** Writes the `budget_threshold` audit events the objects handed out, in the background. */
export function recordBudgetAudits(x: Exchange, audits: readonly BudgetThresholdAudit[]): void {
  if (audits.length === 0) return;
  const db = database(x.env.DB);
  const tenant = x.tenant?.slug ?? null;
  for (const a of audits) {
    // The objects hand out one event per threshold, budget and period: the alert follows it.
    const org = a.owner.startsWith("org:") ? a.owner.slice("org:".length) : null;
    alertAbout(
      x,
      {
        type: "budget.threshold",
        ...(tenant === null ? {} : { tenant }),
        ...(org === null ? {} : { org }),
        data: { owner: a.owner, category: a.category, period: a.period, threshold: a.threshold, amount: a.amount, used: a.used },
      },
      Date.now(),
      false,
    );
    keepAlive(
      x.ctx,
      insertAuditEvent(db, {
        atMs: Date.now(),
        kind: "budget_threshold",
        actor: "quota",
        tenant: a.owner.startsWith("org:") ? null : tenant,
        subject: a.owner,
        detail: { category: a.category, period: a.period, threshold: a.threshold, amount: a.amount, used: a.used, period_start: a.periodStartMs === null ? null : new Date(a.periodStartMs).toISOString() },
      })
        .run()
        .catch((err: unknown) => log.error("audit_write_failed", { error: errorName(err) })),
    );
  }
}

/** The units of `plan` spent from the budget `b` (what the refusal's `c` says). */
function costIn(plan: BudgetPlan, b: BudgetState): number {
  let units = 0;
  for (const s of [...plan.tenantSpends, ...plan.orgSpends]) if (s.owner === b.owner && s.category === b.category) units += s.units;
  return units;
}

/** A budget's refusal as the answer: its problem, the budget's RateLimit headers, the rate-limit charge given back. */
function refuseByBudget(x: Exchange, plan: BudgetPlan, b: BudgetState, nowMs: number): Response | null {
  const { code, response } = budgetRefusal(b, nowMs);
  const refused = refuseAll(x, code, response, nowMs);
  // The request's rate limits had room; what refused it is the budget, and its headers say so.
  if (refused !== null) x.rateHeaders = refusalHeaders(x, b, nowMs, costIn(plan, b));
  return refused;
}

function unavailable(x: Exchange, nowMs: number): Response | null {
  return refuseAll(
    x,
    "budget_unavailable",
    problem("budget_unavailable", {
      detail: "A budget could not be checked; the request was not forwarded and nothing was spent.",
      headers: { "retry-after": String(BUDGET_UNAVAILABLE_RETRY_AFTER_S) },
    }),
    nowMs,
  );
}

async function reserve(x: Exchange, plan: BudgetPlan, nowMs: number, refusals: BudgetRefusals): Promise<Response | null> {
  const outcome = await reserveBudgets(namespaces(x), plan, nowMs, x.config.mode === "shadow");
  switch (outcome.kind) {
    case "reserved": {
      x.budget = outcome.ticket;
      meterBudgets(x, outcome.ticket.charged, (s) => s.units, nowMs);
      recordBudgetAudits(x, outcome.audits);
      if (outcome.wouldRefuse !== null) {
        const { code, response } = budgetRefusal(outcome.wouldRefuse, nowMs);
        // Shadow mode only (a forced reserve): recorded, never the answer.
        return x.refuse(code, response);
      }
      return null;
    }
    case "exhausted": {
      recordBudgetAudits(x, outcome.audits);
      refusals.noteRefused(outcome.budget, nowMs);
      return refuseByBudget(x, plan, outcome.budget, nowMs);
    }
    case "unavailable":
      refusals.noteDown(outcome.object, nowMs);
      return unavailable(x, nowMs);
  }
}

/** A refusal that also gives back the rate-limit charge, when it is the answer (shadow mode forwards, so keeps the charge). */
function refuseAll(x: Exchange, code: "budget_exhausted" | "credits_exhausted" | "budget_unavailable", response: Response, nowMs: number): Response | null {
  const refused = x.refuse(code, response);
  if (refused !== null) refundRateLimits(x, nowMs);
  return refused;
}

/**
 * Reserves the request's spends from the budgets that apply; 429
 * budget_exhausted, 402 credits_exhausted or 503 budget_unavailable when
 * they cannot be taken. Synchronous (no I/O) when no budget applies.
 * @example const budgets = budgetCheck({ responseCharges: config.responseCharges, now: runtime.now });
 */
export function budgetCheck(options: BudgetOptions): Check {
  const { responseCharges, now, refusals } = options;
  return function budgetStep(x) {
    const plan = budgetPlanOf(x, responseCharges);
    if (plan === null) return null;
    const nowMs = now();
    // Shadow mode records every spend at the object, refused or not: it always asks.
    if (x.config.mode !== "shadow") {
      // A spent budget or a failing object is not asked again for a while: a flood of refusals costs no object call.
      if (refusals.isDown(`tenant:${plan.tenant}`, nowMs) || (plan.org !== null && plan.orgSpends.length > 0 && refusals.isDown(`org:${plan.org}`, nowMs))) return unavailable(x, nowMs);
      const spent = refusals.refusing(plan.tenantSpends, nowMs) ?? refusals.refusing(plan.orgSpends, nowMs);
      if (spent !== null) return refuseByBudget(x, plan, spent, nowMs);
    }
    return reserve(x, plan, nowMs, refusals);
  };
}

/** Gives back a reserve whose request was not forwarded (a later step refused it, or it failed); in the background. */
export function releaseBudget(x: Exchange): void {
  const ticket = x.budget;
  if (ticket === null) return;
  x.budget = null;
  const nowMs = x.runtime.now();
  meterBudgets(x, ticket.charged, (s) => -s.units, nowMs);
  keepAlive(x.ctx, settleBudgets(namespaces(x), ticket, ticket.categories.map((category) => ({ category, units: 0 })), nowMs));
}

/**
 * Adds each spend to its tenant's month as `budget:<owner>:<category>` (the
 * metering export's spend per budget and period); an org's budget is metered
 * under each of its tenants, so the org's spend is their sum.
 */
function meterBudgets(x: Exchange, spends: readonly BudgetSpend[], delta: (s: BudgetSpend) => number, nowMs: number): void {
  const tenant = x.tenant;
  if (tenant === null) return;
  for (const s of spends) x.runtime.meter.add(tenant.slug, `budget:${s.owner}:${s.category}`, delta(s), nowMs, x.config.usageMaxPending);
}

/** The route's charge of `category` (0 when it charges none). */
function routeChargeOf(x: Exchange, category: string): number {
  return x.route?.charges.find(([c]) => c === category)?.[1] ?? 0;
}

/**
 * Settles a response-priced category's actual cost against its reserve in
 * the budgets (refund or debt; a reserve of 0 settles its whole cost as
 * debt), in the background. A charge_on_status route whose status did not
 * match has its charge of that category taken off here too (one settlement
 * per category and request).
 */
export function settleBudgetCost(x: Exchange, category: string, reserveUnits: number, result: CostResult): void {
  const ticket: BudgetTicket | null = x.budget;
  if (ticket === null || !ticket.categories.includes(category)) return;
  const routeCharge = routeChargeOf(x, category);
  const givenBack = x.statusChargeReturned ? routeCharge : 0;
  const cost = result.found ? result.cost : reserveUnits;
  if (cost === reserveUnits && givenBack === 0) return;
  // The category's whole spend: the reserve replaced by the cost, plus what the route charges of it (and the request unit).
  const base = (category === REQUEST_CATEGORY ? 1 : 0) + routeCharge - givenBack;
  const nowMs = x.runtime.now();
  // Metered as charged: the cost replaces the reserve (a refund of a period already ended is metered all the same).
  meterBudgets(x, ticket.charged.filter((s) => s.category === category), () => cost - reserveUnits - givenBack, nowMs);
  const work = settleBudgets(namespaces(x), ticket, [{ category, units: base + cost }], nowMs).then((audits) => recordBudgetAudits(x, audits));
  keepAlive(x.ctx, work);
}

/**
 * Gives back `units` of `category` from the request's budgets: a
 * charge_on_status charge whose status did not match. A response-priced
 * category is left to its own settlement (settleBudgetCost), which replaces
 * the category's reserve once and takes this off.
 */
export function refundBudgetUnits(x: Exchange, category: string, units: number): void {
  const ticket: BudgetTicket | null = x.budget;
  if (ticket === null || units === 0 || !ticket.categories.includes(category)) return;
  if (x.priced !== null && x.priced.charge.category === category) return;
  const nowMs = x.runtime.now();
  const base = (category === REQUEST_CATEGORY ? 1 : 0) + routeChargeOf(x, category);
  meterBudgets(x, ticket.charged.filter((s) => s.category === category), () => -units, nowMs);
  keepAlive(x.ctx, settleBudgets(namespaces(x), ticket, [{ category, units: Math.max(0, base - units) }], nowMs).then(() => undefined));
}

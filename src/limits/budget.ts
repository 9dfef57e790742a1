// The budget step: after the rate limits admit a request, every unit it
// spends of a budgeted category (its `request` unit, its route's charges, a
// response-priced reserve) is spent from each budget of that category that
// applies — the key's, its tenant's, the tenant's org's — before anything is
// forwarded (src/limits/budget-plan.ts says which).
//
// Spends come from the isolate's leases of those budgets
// (src/limits/budget-leases.ts): units the budget's quota object granted to
// this isolate and already counts as spent, so a request whose leases hold
// its units is decided with no I/O, and admitted spends never exceed the
// amount. One that finds them short waits for one call to the object (shared
// by the requests of that object in the isolate), which grants what the
// waiting requests need, and more while the budget is far from its end.
// Shadow mode instead reserves each request at the objects, forcing the
// spend past the amount (what it would have refused is recorded).
//
// All or nothing with the rate limits: a budget refusal (or an object that
// cannot answer) gives the rate-limit charges back, as a rate-limit denial
// charges nothing. What happens after (a release, a priced settlement, a
// status charge given back) is src/limits/budget-settle.ts.
//
// Since a refusal gives the rate-limit charge back, no rate limit stops a
// caller whose budget is spent: the isolate remembers the refusal
// (src/cache/budget-refusals.ts) and refuses that budget without an object
// call for a few seconds, and leaves an object that failed alone for one.
//
// A shadow budget (`shadow: true`, which its object's figures carry) is spent
// from like any other while it has units; one that cannot take a spend
// refuses nothing: the object decides it apart from the others (it charges
// it nothing), and here its spends leave the request, which goes on marked
// `Tollgate-Shadow: budget_exhausted;policy="budget-<category>-<owner kind>-<period>"`.
import type { Exchange } from "../exchange";
import { type BudgetRefusals, spendFits } from "../cache/budget-refusals";
import { type BudgetNamespaces, type BudgetPlan, reserveBudgets } from "../durable/budget-client";
import type { BudgetState } from "../durable/budget-types";
import type { BudgetFigures, LeaseDebit, SlotSpend } from "../engine/budget-lease-book";
import { budgetPolicyName } from "../engine/rate-limit-headers";
import type { ResponseCharge } from "../proxy/response-cost-spec";
import { budgetRefusal, budgetUnavailable, recordBudgetAudits, refuseByBudget } from "./budget-answers";
import type { BudgetLeases } from "./budget-leases";
import { budgetPlanOf } from "./budget-plan";
import { meterBudgets } from "./budget-settle";
import type { Check, CheckResult } from "./check";

/** Calls to the objects one request may wait for before it is answered 503 (its leases kept coming back short). */
const MAX_ASK_ROUNDS = 8;

export interface BudgetOptions {
  /** Each route's response_charge, by route index (its reserve spends budgets too). */
  readonly responseCharges: readonly (ResponseCharge | null)[];
  /** The runtime's clock: periods roll over by it. */
  readonly now: () => number;
  /** The isolate's memory of budgets that refused and objects that failed (the runtime's). */
  readonly refusals: BudgetRefusals;
  /** The isolate's leases of budgets (the runtime's). */
  readonly leases: BudgetLeases;
}

export function budgetNamespaces(x: Exchange): BudgetNamespaces {
  return { tenant: x.env.TENANT_QUOTA, org: x.env.ORG_QUOTA };
}

/** The request's spends on the slots of the isolate's lease book. */
function slotSpends(leases: BudgetLeases, plan: BudgetPlan, nowMs: number): SlotSpend[] {
  const out: SlotSpend[] = [];
  const tenantObject = `tenant:${plan.tenant}`;
  for (const s of plan.tenantSpends) out.push({ slot: leases.book.slot(tenantObject, s.owner, s.category, nowMs), units: s.units });
  if (plan.org !== null) {
    const orgObject = `org:${plan.org}`;
    for (const s of plan.orgSpends) out.push({ slot: leases.book.slot(orgObject, s.owner, s.category, nowMs), units: s.units });
  }
  return out;
}

/** Counts (1) or uncounts (−1) a waiting request's needs in its slots, so the next ask covers them too. */
function countWaiting(shorts: ReadonlyMap<string, SlotSpend[]>, sign: 1 | -1): void {
  for (const list of shorts.values()) for (const s of list) s.slot.waiting += sign * s.units;
}

/** The request holds what it took from its leases; metered as spent. */
function holdLeased(x: Exchange, debits: LeaseDebit[], nowMs: number): void {
  const spends = debits.map((d) => ({ owner: d.slot.owner, category: d.slot.category, units: d.units }));
  x.budget = { kind: "leased", debits, spends };
  meterBudgets(x, spends, (s) => s.units, nowMs);
}

/**
 * A shadow budget that cannot take the request's spend: marked on the
 * request (as its refusal would name it), and its spends taken out of the
 * plan, so the request goes on without it.
 */
function passShadow(x: Exchange, plan: BudgetPlan, b: BudgetFigures): BudgetPlan {
  markShadowBudget(x, b);
  const other = (s: { owner: string; category: string }) => s.owner !== b.owner || s.category !== b.category;
  return { ...plan, tenantSpends: plan.tenantSpends.filter(other), orgSpends: plan.orgSpends.filter(other) };
}

/** Marks the request with what a shadow budget that cannot take its spend would have answered. */
function markShadowBudget(x: Exchange, b: BudgetFigures): void {
  const ownerKind = b.owner.slice(0, Math.max(0, b.owner.indexOf(":")));
  x.markShadow(b.resetsAtMs === null ? "credits_exhausted" : "budget_exhausted", budgetPolicyName(b.category, ownerKind, b.period));
}

/** The budget a short spend was refused by while the request waited (the object's figures say it still does not fit), or null. */
function refusedWhileWaiting(shorts: ReadonlyMap<string, SlotSpend[]>, sinceMs: number): BudgetState | null {
  for (const list of shorts.values()) {
    for (const { slot, units } of list) {
      const figures = slot.figures;
      if (slot.refusedAtMs >= sinceMs && figures !== null && !spendFits(figures, units)) return figures;
    }
  }
  return null;
}

async function waitForLeases(x: Exchange, asked: BudgetPlan, allSpends: readonly SlotSpend[], first: ReadonlyMap<string, SlotSpend[]>, sinceMs: number, options: BudgetOptions): Promise<CheckResult> {
  let plan = asked;
  let spends = allSpends;
  const { leases, refusals, now } = options;
  const ns = budgetNamespaces(x);
  let shorts = first;
  // A request's needs stay counted from its first ask until it is decided, so
  // that every ask (whoever sends it) wants what all waiting requests need.
  countWaiting(shorts, 1);
  try {
    for (let round = 0; round < MAX_ASK_ROUNDS; round++) {
      const outcomes = await Promise.all([...shorts].map(async ([object, list]) => ({ object, outcome: await leases.flight(ns, x.ctx, object, list, (audits) => recordBudgetAudits(x, audits)) })));
      const nowMs = Math.floor(now());
      const failed = outcomes.find((o) => o.outcome.failed);
      if (failed !== undefined) {
        refusals.noteDown(failed.object, nowMs);
        return budgetUnavailable(x, nowMs);
      }
      let next = leases.book.take(spends, nowMs);
      let refusing = next.kind === "taken" ? null : refusedWhileWaiting(next.shorts, sinceMs);
      // A shadow budget that refused leaves the request; the rest are taken without it.
      while (refusing?.shadow === true) {
        const shadow: BudgetState = refusing;
        refusals.noteRefused(shadow, nowMs);
        plan = passShadow(x, plan, shadow);
        spends = spends.filter((s) => s.slot.owner !== shadow.owner || s.slot.category !== shadow.category);
        next = leases.book.take(spends, nowMs);
        refusing = next.kind === "taken" ? null : refusedWhileWaiting(next.shorts, sinceMs);
      }
      if (next.kind === "taken") {
        if (spends.length > 0) holdLeased(x, next.debits, nowMs);
        return null;
      }
      if (refusing !== null) {
        refusals.noteRefused(refusing, nowMs);
        return refuseByBudget(x, plan, refusing, nowMs);
      }
      countWaiting(shorts, -1);
      shorts = next.shorts;
      countWaiting(shorts, 1);
    }
    // The leases kept coming back short (every grant went to other requests first): not checked in time.
    return budgetUnavailable(x, Math.floor(now()));
  } finally {
    countWaiting(shorts, -1);
  }
}

async function reserve(x: Exchange, plan: BudgetPlan, nowMs: number, refusals: BudgetRefusals): Promise<Response | null> {
  const outcome = await reserveBudgets(budgetNamespaces(x), plan, nowMs, x.config.mode === "shadow");
  switch (outcome.kind) {
    case "reserved": {
      x.budget = { kind: "reserved", ticket: outcome.ticket };
      meterBudgets(x, outcome.ticket.charged, (s) => s.units, nowMs);
      recordBudgetAudits(x, outcome.audits);
      // Shadow mode charged the shadow budgets past their room too (as it does the enforced ones): named all the same.
      for (const b of outcome.shadows) markShadowBudget(x, b);
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
      return budgetUnavailable(x, nowMs);
  }
}

/**
 * Spends the request's units from the budgets that apply; 429
 * budget_exhausted, 402 credits_exhausted or 503 budget_unavailable when
 * they cannot be spent. Synchronous (no I/O) when no budget applies, and
 * when the isolate's leases hold the units.
 * @example const budgets = budgetCheck({ responseCharges: config.responseCharges, now: runtime.now, refusals: runtime.budgetRefusals, leases: runtime.budgetLeases });
 */
export function budgetCheck(options: BudgetOptions): Check {
  const { responseCharges, now, refusals, leases } = options;
  return function budgetStep(x) {
    let plan = budgetPlanOf(x, responseCharges);
    if (plan === null) return null;
    const nowMs = Math.floor(now());
    // Shadow mode records every spend at the object, refused or not: it always asks.
    if (x.config.mode === "shadow") return reserve(x, plan, nowMs, refusals);
    // A spent budget or a failing object is not asked again for a while: a flood of refusals costs no object call.
    if (refusals.isDown(`tenant:${plan.tenant}`, nowMs) || (plan.org !== null && plan.orgSpends.length > 0 && refusals.isDown(`org:${plan.org}`, nowMs))) return budgetUnavailable(x, nowMs);
    let spent = refusals.refusing(plan.tenantSpends, nowMs) ?? refusals.refusing(plan.orgSpends, nowMs);
    // A shadow budget remembered as spent is passed here, with no object call.
    while (spent?.shadow === true) {
      plan = passShadow(x, plan, spent);
      spent = refusals.refusing(plan.tenantSpends, nowMs) ?? refusals.refusing(plan.orgSpends, nowMs);
    }
    if (spent !== null) return refuseByBudget(x, plan, spent, nowMs);
    if (plan.tenantSpends.length === 0 && plan.orgSpends.length === 0) return null;
    const reportDue = () => leases.reportDue(budgetNamespaces(x), x.ctx, nowMs, (audits) => recordBudgetAudits(x, audits));
    const spends = slotSpends(leases, plan, nowMs);
    const first = leases.book.take(spends, nowMs);
    if (first.kind === "taken") {
      holdLeased(x, first.debits, nowMs);
      reportDue();
      return null;
    }
    // The ask (sent before this returns) closes its slots' ended leases itself, in the call that grants the new ones, so
    // the object gives their unspent units back before it grants, and before it prunes the rows of leases ended a day
    // ago (an isolate back after a quiet day); the other slots' reports and closes go after it.
    const decided = waitForLeases(x, plan, spends, first.shorts, nowMs, options);
    reportDue();
    return decided;
  };
}

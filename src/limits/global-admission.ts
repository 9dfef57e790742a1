// One request's charges when some of their limits are global,
// all or nothing across both kinds: the isolate limits are checked in the
// table first (charging nothing), then every global spend is taken from its
// lease at once, and only then are the isolate limits charged. A request
// refused by any limit takes no units from another; nothing is awaited here.
// When a lease is short, the outcome says which, and the rate-limit step asks
// the ledger (src/limits/global-leases.ts) and decides again.
//
// The ledger down (`global.on_error`): "local" moves that group's global
// limits into the isolate's table for the request (each global limit keeps a
// state of its own there, limit.ts); "deny" answers 503 limits_unavailable.
import { admit, type Charge, type Decision, type HeaderFigures, wouldAdmit } from "../engine/gcra";
import type { LeaseGroup, LeaseRef, Short } from "../engine/lease-types";
import { type Limit, sameLimit } from "../engine/limit";
import { ceilDiv } from "../engine/exact-division";
import type { LimiterTable } from "../engine/limiter-table";
import type { GlobalLeases } from "./global-leases";

export type GlobalOutcome =
  /** `ledgerError`: some global limit was metered in the isolate because the ledger is down. */
  | { readonly kind: "decided"; readonly decision: Decision; readonly ledgerError: boolean }
  /** The ledger is down and on_error is "deny". */
  | { readonly kind: "unavailable" }
  /** Leases to ask for; nothing was charged. */
  | { readonly kind: "short"; readonly shorts: ReadonlyMap<LeaseGroup, Short[]> };

/** A request's charges and where each of their global spends goes. */
export interface GlobalPlan {
  readonly charges: readonly Charge[];
  readonly refs: readonly LeaseRef[];
}

/** The plan for `charges`, or null when none of their limits is global (the table alone decides). */
export function planGlobal(leases: GlobalLeases, charges: readonly Charge[], nowMs: number): GlobalPlan | null {
  let refs: LeaseRef[] | null = null;
  for (let c = 0; c < charges.length; c++) {
    const charge = charges[c]!;
    if (charge.cost === 0) continue;
    // Looked up once per charge, at its first global limit: group() builds a key and touches the LRU map.
    let group: LeaseGroup | null = null;
    for (const limit of charge.limits) {
      if (limit.scope !== "global") continue;
      refs ??= [];
      group ??= leases.book.group(charge.subject, charge.category, nowMs);
      refs.push({ group, slot: leases.book.slot(group, limit, nowMs), cost: charge.cost, chargeIndex: c });
    }
  }
  return refs === null ? null : { charges, refs };
}

/** The charges as the table sees them: isolate limits, plus the global limits metered locally while their ledger is down. */
function tableCharges(charges: readonly Charge[], local: readonly LeaseRef[]): Charge[] {
  return charges.map((charge, c) => {
    if (!charge.limits.some((l) => l.scope === "global")) return charge;
    const limits = charge.limits.filter((l) => l.scope !== "global" || local.some((r) => r.chargeIndex === c && sameLimit(r.slot.limit, l)));
    return { subject: charge.subject, category: charge.category, cost: charge.cost, limits };
  });
}

/** Decides `plan` at whole-ms `nowMs` without I/O. */
export function decideGlobal(table: LimiterTable, leases: GlobalLeases, plan: GlobalPlan, nowMs: number): GlobalOutcome {
  const book = leases.book;
  let local: LeaseRef[] = [];
  let live: readonly LeaseRef[] = plan.refs;
  if (plan.refs.some((r) => book.isDown(r.group, nowMs))) {
    if (leases.onError === "deny") return { kind: "unavailable" };
    local = plan.refs.filter((r) => book.isDown(r.group, nowMs));
    live = plan.refs.filter((r) => !book.isDown(r.group, nowMs));
  }
  const charges = tableCharges(plan.charges, local);
  const ledgerError = local.length > 0;
  const check = wouldAdmit(table, charges, nowMs);
  if (!check.allowed) return { kind: "decided", decision: check, ledgerError };
  const taken = book.take(live, nowMs);
  if (taken.kind === "short") return { kind: "short", shorts: taken.shorts };
  if (taken.kind === "refused") {
    const ref = live[taken.ref]!;
    const tightest: HeaderFigures = { chargeIndex: ref.chargeIndex, limit: ref.slot.limit, remaining: taken.remaining, resetMs: taken.resetMs };
    return { kind: "decided", decision: { allowed: false, retryAfterMs: taken.retryAfterMs, deniedChargeIndex: ref.chargeIndex, tightest }, ledgerError };
  }
  const decision = admit(table, charges, nowMs);
  if (!decision.allowed) {
    // Cannot happen (wouldAdmit said yes, synchronously); if it did, the units go back to their leases, still live.
    for (const r of live) r.slot.units += r.cost;
    return { kind: "decided", decision, ledgerError };
  }
  if (taken.tightest < 0) return { kind: "decided", decision, ledgerError };
  const ref = live[taken.tightest]!;
  const global: HeaderFigures = { chargeIndex: ref.chargeIndex, limit: ref.slot.limit, remaining: taken.remaining, resetMs: taken.resetMs };
  const own = decision.tightest;
  const tightest = own === null || global.remaining < own.remaining || (global.remaining === own.remaining && global.resetMs > own.resetMs) ? global : own;
  return { kind: "decided", decision: { ...decision, tightest }, ledgerError };
}

/**
 * The answer when leases stayed short through every round of asks (the
 * ledger grants, but concurrent requests in this isolate spend the units
 * first): refused, told to come back when the ledger has earned back one unit.
 */
export function contended(plan: GlobalPlan, shorts: ReadonlyMap<LeaseGroup, Short[]>): Decision {
  let worst: { limit: Limit; delayMs: number } | null = null;
  for (const list of shorts.values()) {
    for (const { slot } of list) {
      const delayMs = Math.max(1, ceilDiv(slot.limit.intervalUnits, slot.limit.unitsPerMs));
      if (worst === null || delayMs > worst.delayMs) worst = { limit: slot.limit, delayMs };
    }
  }
  const ref = plan.refs.find((r) => r.slot.limit === worst?.limit) ?? plan.refs[0]!;
  return {
    allowed: false,
    retryAfterMs: worst?.delayMs ?? 1,
    deniedChargeIndex: ref.chargeIndex,
    tightest: { chargeIndex: ref.chargeIndex, limit: ref.slot.limit, remaining: 0, resetMs: worst?.delayMs ?? 1 },
  };
}

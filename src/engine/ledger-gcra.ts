// Exact GCRA on one explicit state: the moves of a global
// limit's authoritative state, kept by the LimitLedger Durable Object and by
// the property test's simulated ledger alike. The same rule and the same
// exact units as gcra.ts (see limit.ts): the state is held as the limiter
// table holds it, TAT rounded up to a whole ms plus a deficit in the limit's
// units, so it stores as two integers.
//
// - grant: a lease of g units is one spend of g, so
//   grants never exceed the limit. g is at least the asker's `need`, at most
//   its `want`, and never more than half the room left after `need`: as the
//   ledger nears the limit, leases shrink to the single exact spend asked for.
// - giveBack: unspent units of a lease, credited less what the rate earned
//   back while the lease was out: credit = units·T − elapsed, where elapsed
//   runs from the grant to the latest time the state has been charged at
//   (isolates' clocks differ, and calls arrive out of order). Crediting the
//   whole lease would let the time it sat unspent be spent again (a lease
//   held idle then returned whole "banks" the idle drain, and the overshoot
//   is then unbounded); with this credit every state stays at least the
//   state of an exact GCRA fed only the units actually spent, at their grant
//   times, which is what the bound B + (Δ + L)·C/W rests on (docs/global-limits.md).
// - debt / refund: a response-priced settlement, as
//   src/proxy/response-cost-gcra.ts does it on the limiter table.
import { MAX_COST, type Limit } from "./limit";
import { ceilDiv, floorDiv } from "./exact-division";
import { debtUnitsAfter, refundUnitsAfter, remainingOf } from "./gcra";

/** One limit's state: TAT = tatCeilMs − deficitUnits/unitsPerMs. Earned back (no state) when tatCeilMs <= now. */
export interface GcraState {
  readonly tatCeilMs: number;
  /** 0 <= deficitUnits < unitsPerMs. */
  readonly deficitUnits: number;
}

export const EMPTY_STATE: GcraState = Object.freeze({ tatCeilMs: 0, deficitUnits: 0 });

/** What a limit's state leaves, at a time: the figures explain and the RateLimit headers show. */
export interface Standing {
  /** Whole spends of cost 1 that fit now. */
  readonly remaining: number;
  /** Whole ms, rounded up, until the state is earned back (0: it is). */
  readonly resetMs: number;
}

export type GrantOutcome =
  | { readonly granted: true; readonly units: number; readonly state: GcraState; readonly standing: Standing }
  | { readonly granted: false; readonly retryAfterMs: number; readonly standing: Standing };

/** TAT − t in the limit's units; 0 when the state is earned back at whole-ms t. */
export function aheadUnits(limit: Limit, state: GcraState, t: number): number {
  const aheadMs = state.tatCeilMs - t;
  return aheadMs > 0 ? aheadMs * limit.unitsPerMs - state.deficitUnits : 0;
}

/**
 * The state that is `relUnits` ahead of whole-ms t. A state earned back at t
 * keeps TAT = t rather than forgetting it: a call stamped earlier (another
 * isolate's clock, a call that arrived late) must still see it.
 */
export function stateAt(limit: Limit, relUnits: number, t: number): GcraState {
  if (relUnits <= 0) return { tatCeilMs: t, deficitUnits: 0 };
  const resetMs = ceilDiv(relUnits, limit.unitsPerMs);
  return { tatCeilMs: t + resetMs, deficitUnits: resetMs * limit.unitsPerMs - relUnits };
}

export function standingOf(limit: Limit, relUnits: number): Standing {
  return { remaining: remainingOf(limit, relUnits), resetMs: relUnits <= 0 ? 0 : ceilDiv(relUnits, limit.unitsPerMs) };
}

/** The standing of `state` at `nowMs`. */
export function standingAt(limit: Limit, state: GcraState, nowMs: number): Standing {
  return standingOf(limit, aheadUnits(limit, state, Math.floor(nowMs)));
}

function isWhole(n: number, min: number, max: number): boolean {
  return Number.isSafeInteger(n) && n >= min && n <= max;
}

/**
 * A lease for a spend of `need` units (1..MAX_COST): granted with g units,
 * need <= g <= max(need, want), when a spend of `need` fits at `nowMs` —
 * docs/design.md's rule, an oversize need (above the burst) included — else the
 * exact delay in whole ms, rounded up, after which it would fit if nothing
 * else were spent. Throws RangeError for a need or want out of range (a bug).
 */
export function grantLease(limit: Limit, state: GcraState, need: number, want: number, nowMs: number): GrantOutcome {
  if (!isWhole(need, 1, MAX_COST)) throw new RangeError(`need must be a whole number in 1..${MAX_COST}`);
  if (!isWhole(want, 0, Number.MAX_SAFE_INTEGER)) throw new RangeError("want must be a whole number >= 0");
  const t = Math.floor(nowMs);
  const rel = aheadUnits(limit, state, t);
  const T = limit.intervalUnits;
  if (need > limit.burst) {
    // Oversize: admitted whole only once everything before it is earned back; never padded.
    if (rel > 0) return { granted: false, retryAfterMs: ceilDiv(rel, limit.unitsPerMs), standing: standingOf(limit, rel) };
    const after = need * T;
    return { granted: true, units: need, state: stateAt(limit, after, t), standing: standingOf(limit, after) };
  }
  const delayUnits = rel + need * T - limit.toleranceUnits;
  if (delayUnits > 0) return { granted: false, retryAfterMs: ceilDiv(delayUnits, limit.unitsPerMs), standing: standingOf(limit, rel) };
  const room = floorDiv(limit.toleranceUnits - rel, T);
  const extra = Math.max(0, Math.min(want - need, Math.floor((room - need) / 2)));
  const units = need + extra;
  const after = rel + units * T;
  return { granted: true, units, state: stateAt(limit, after, t), standing: standingOf(limit, after) };
}

/**
 * Credits `units` unspent units of a lease granted at `grantedAtMs` back at
 * `nowMs`: units·T less the time from the grant to the later of nowMs and
 * `latestMs` (the latest time the state was charged at), never below now.
 * Returns the new state and the units of 1/unitsPerMs ms credited.
 */
export function giveBack(limit: Limit, state: GcraState, units: number, grantedAtMs: number, nowMs: number, latestMs = nowMs): { state: GcraState; creditedUnits: number } {
  if (!isWhole(units, 0, limit.burst + MAX_COST)) throw new RangeError("units must be a whole number no larger than a lease");
  const t = Math.floor(nowMs);
  const rel = aheadUnits(limit, state, t);
  const elapsedMs = Math.max(0, Math.max(t, Math.floor(latestMs)) - Math.floor(grantedAtMs));
  const leaseUnits = units * limit.intervalUnits;
  // elapsedMs·unitsPerMs may pass 2^53 for a lease long gone: compare in ms first.
  if (units === 0 || rel === 0 || elapsedMs >= ceilDiv(leaseUnits, limit.unitsPerMs)) return { state, creditedUnits: 0 };
  const credit = Math.min(rel, leaseUnits - elapsedMs * limit.unitsPerMs);
  return { state: stateAt(limit, rel - credit, t), creditedUnits: credit };
}

/** A response-priced debt: `units` charged whatever the limit says, capped so the state stays exact. */
export function chargeDebtOn(limit: Limit, state: GcraState, units: number, nowMs: number): GcraState {
  if (!isWhole(units, 0, Number.MAX_SAFE_INTEGER)) throw new RangeError("units must be a whole number >= 0");
  const t = Math.floor(nowMs);
  return stateAt(limit, debtUnitsAfter(limit, aheadUnits(limit, state, t), units), t);
}

/** A response-priced refund: `units` given back, never before now. */
export function refundOn(limit: Limit, state: GcraState, units: number, nowMs: number): GcraState {
  if (!isWhole(units, 0, Number.MAX_SAFE_INTEGER)) throw new RangeError("units must be a whole number >= 0");
  const t = Math.floor(nowMs);
  return stateAt(limit, refundUnitsAfter(limit, aheadUnits(limit, state, t), units), t);
}

/** One limit of a ledger ask, with its stored state. */
export interface LedgerAsk {
  readonly limit: Limit;
  readonly state: GcraState;
  /** The latest time the state was charged at (0: never). */
  readonly seenMs: number;
  readonly need: number;
  readonly want: number;
  /** Unspent units of the asker's previous lease of this limit (0: none), granted at returningGrantedAtMs. */
  readonly returning: number;
  readonly returningGrantedAtMs: number;
}

export type LedgerAskOutcome =
  | { readonly granted: true; readonly grants: readonly { readonly units: number; readonly standing: Standing }[]; readonly states: readonly GcraState[] }
  | { readonly granted: false; readonly index: number; readonly retryAfterMs: number; readonly standing: Standing; readonly states: readonly GcraState[] };

/**
 * The ledger's whole answer to one ask at `nowMs` (what LimitLedger.grant
 * decides inside its transaction): the units each item gives back are
 * credited first, whatever follows; then every item is granted, or none — the
 * first whose need does not fit is refused. `states` are the states to store
 * (after the give-backs only, when refused).
 */
export function answerAsk(items: readonly LedgerAsk[], nowMs: number): LedgerAskOutcome {
  const states = items.map((item) => (item.returning === 0 ? item.state : giveBack(item.limit, item.state, item.returning, item.returningGrantedAtMs, nowMs, item.seenMs).state));
  const grants: { units: number; standing: Standing }[] = [];
  const after: GcraState[] = [];
  for (let k = 0; k < items.length; k++) {
    const item = items[k]!;
    const outcome = grantLease(item.limit, states[k]!, item.need, item.want, nowMs);
    if (!outcome.granted) return { granted: false, index: k, retryAfterMs: outcome.retryAfterMs, standing: outcome.standing, states };
    grants.push({ units: outcome.units, standing: outcome.standing });
    after.push(outcome.state);
  }
  return { granted: true, grants, states: after };
}

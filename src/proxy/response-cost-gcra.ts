// The limiter table's settlement of a response-priced charge,
// written on the table's public methods the way gcra.ts's admit() is. The
// moves themselves (debtUnitsAfter, refundUnitsAfter) are the engine's, the
// same the LimitLedger applies to a global limit's state.
//
// - chargeDebt: the actual cost passed the reserve; charge the difference
//   whatever the limits say. TAT = max(TAT, t) + n·T, even past the burst:
//   the caller's next spends are then refused, each with the exact delay
//   until the rate has earned the debt back (admit's own rule).
// - refund: the actual cost fell short of the reserve; give the difference
//   back. TAT = max(t, TAT − n·T): never before now, so a refund cannot
//   leave credit a fresh state would not have, and a state already earned
//   back (or forgotten by the table) gets nothing.
//
// Exactness (limit.ts). admit() keeps every state within max(B, MAX_COST)·T
// of now; a debt cannot, or a limit could not hold a cost above its burst.
// A debt stops at MAX_EXACT_UNITS − MAX_COST·T units ahead of now instead:
// one admit() check on top (at most MAX_COST·T more) still stays below 2^52,
// and the table still stores the state's whole-ms TAT within 2^52 ms of now.
// For any real limit that is years of debt (100k tokens/min: 10^15 minutes).
import { debtUnitsAfter, type HeaderFigures, refundUnitsAfter, remainingOf } from "../engine/gcra";
import type { Limit } from "../engine/limit";
import { ceilDiv } from "../engine/exact-division";
import type { LimiterTable } from "../engine/limiter-table";

/** One subject's settlement in one category: `units` (a whole number, 0..MAX_RESPONSE_COST) on each of `limits`. */
export interface SettleCharge {
  subject: string;
  category: string;
  /** The limits the reserve was charged to (capture them at admission: a config change must not move a settlement). */
  limits: readonly Limit[];
  units: number;
}

export interface SettledFigures {
  /** The limit the rate-limit headers describe after the settlement (least remaining, then longest reset, then first); never a shadow limit (kept, not advertised); null when nothing enforced is metered. Its chargeIndex is the settlement's index. */
  readonly tightest: HeaderFigures | null;
  /** Whole ms, rounded up, until a spend of 1 fits every enforced limit again: what the caller's next request would be told (0 when it fits now). */
  readonly retryAfterMs: number;
}

type Move = (limit: Limit, relUnits: number, units: number) => number;

/** Charges each settlement's units on every limit, unconditionally (debt). */
export function chargeDebt(table: LimiterTable, settlements: readonly SettleCharge[], nowMs: number): SettledFigures {
  return settle(table, settlements, nowMs, debtUnitsAfter, true);
}

/**
 * The tightest figures of the policies an answer lists (every enforced limit
 * of a charge with a cost: a charge of 0 charges its limits nothing, so
 * RateLimit never names one) as they stand now, read as a settlement of 0
 * units (which moves nothing): what an answer's RateLimit headers say after
 * a refund or a give-back. Its chargeIndex is an index into `charges`.
 */
export function figuresNow(table: LimiterTable, charges: readonly { readonly subject: string; readonly category: string; readonly limits: readonly Limit[]; readonly cost: number }[], nowMs: number): HeaderFigures | null {
  return chargeDebt(table, charges.map((c) => ({ subject: c.subject, category: c.category, limits: c.cost > 0 ? c.limits : [], units: 0 })), nowMs).tightest;
}

/** Gives each settlement's units back on every limit, never before now (refund). */
export function refund(table: LimiterTable, settlements: readonly SettleCharge[], nowMs: number): SettledFigures {
  return settle(table, settlements, nowMs, refundUnitsAfter, false);
}

function isUnits(units: number): boolean {
  return Number.isSafeInteger(units) && units >= 0;
}

function settle(table: LimiterTable, settlements: readonly SettleCharge[], nowMs: number, move: Move, createState: boolean): SettledFigures {
  const t = Math.floor(nowMs);
  let tightest: HeaderFigures | null = null;
  let retryAfterMs = 0;
  for (let s = 0; s < settlements.length; s++) {
    const settlement = settlements[s]!;
    if (!isUnits(settlement.units)) throw new RangeError(`settlement ${s}: units must be a whole number >= 0`);
    // One hash per key: setHashOf and tagOf derive every limit's slot from it (as admit() does).
    if (settlement.limits.length > 0) table.hashKey(settlement.subject, settlement.category);
    for (const limit of settlement.limits) {
      const setHash = table.setHashOf(limit);
      const tag = table.tagOf(limit);
      const slot = table.find(setHash, tag);
      const q = limit.unitsPerMs;
      const aheadMs = table.aheadMs(slot, t);
      const relUnits = aheadMs === 0 ? 0 : aheadMs * q - table.deficit(slot);
      const after = settlement.units === 0 || (relUnits === 0 && !createState) ? relUnits : move(limit, relUnits, settlement.units);
      const resetMs = ceilDiv(after, q);
      if (after !== relUnits) {
        // A refund down to now leaves no state: the slot is freed.
        if (resetMs === 0) {
          if (slot >= 0) table.forget(slot);
        } else table.write(slot, setHash, tag, t, resetMs, resetMs * q - after);
      }
      // A shadow limit is kept (above) but never named in an answer's headers nor waited for.
      if (limit.shadow) continue;
      const remaining = remainingOf(limit, after);
      if (tightest === null || remaining < tightest.remaining || (remaining === tightest.remaining && resetMs > tightest.resetMs)) {
        tightest = { chargeIndex: s, limit, remaining, resetMs };
      }
      const delayUnits = after + limit.intervalUnits - limit.toleranceUnits;
      if (delayUnits > 0) retryAfterMs = Math.max(retryAfterMs, ceilDiv(delayUnits, q));
    }
  }
  return { tightest, retryAfterMs };
}

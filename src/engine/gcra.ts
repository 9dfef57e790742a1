// The admission decision: exact GCRA (DESIGN §4) over every limit of every
// charge, all or nothing.
//
// Per (subject, category, limit) the state is one instant TAT. At whole-ms time
// t a spend of cost n has E = max(TAT, t) and fits when E + n·T − t <= B·T, or,
// when n > B, when E = t (an oversize spend is admitted whole once everything
// before it is earned back). Admitted: TAT = E + n·T. All arithmetic is in the
// limit's own exact units (see limit.ts), so no rounding can flip a decision or
// move a retry delay by a millisecond.
import { ceilDiv, floorDiv, type LimiterTable } from "./limiter-table";
import { MAX_COST, type Limit } from "./limit";

/** One subject's spend in one category: `cost` units against each of `limits`. */
export interface Charge {
  /** `key:<sha256hex>`, `ip:203.0.113.7`, `ip:2001:db8:1:2::/64`, `tenant:acme`, `anonymous`, `admin:<hex>`. */
  subject: string;
  category: string;
  /** Empty: nothing applies, the charge admits everything. */
  limits: readonly Limit[];
  /** Whole number, 0..MAX_COST. 0 is always admitted and charges nothing. */
  cost: number;
}

/** The limit the rate-limit headers describe, and its figures after the decision. */
export interface HeaderFigures {
  readonly chargeIndex: number;
  readonly limit: Limit;
  /** Whole spends of cost 1 the limit still admits at nowMs, after this decision. */
  readonly remaining: number;
  /** Whole ms, rounded up, until the limit is fully earned back (0 when it already is). */
  readonly resetMs: number;
}

export interface Decision {
  readonly allowed: boolean;
  /**
   * 0 when allowed. Else the exact delay in whole ms, rounded up, after which
   * the same spend is admitted if nothing else is spent: the largest, over the
   * limits it does not fit, of E + n·T − t − B·T (or E − t for an oversize
   * spend). The same spend 1 ms earlier is still denied.
   */
  readonly retryAfterMs: number;
  /** The charge holding the limit with the largest delay; −1 when allowed. */
  readonly deniedChargeIndex: number;
  /** Denied: that limit. Allowed: the limit with the least remaining (ties: longest reset, then first). Null when nothing was metered. */
  readonly tightest: HeaderFigures | null;
}

const ALLOWED_UNMETERED: Decision = Object.freeze({ allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: null });

/** Whole cost-1 spends that still fit a state of TAT − t = relUnits: floor((B·T − (E − t)) / T), at least 0. */
function remainingOf(limit: Limit, relUnits: number): number {
  const slackUnits = limit.toleranceUnits - relUnits;
  if (slackUnits <= 0) return 0;
  return limit.intervalUnits === 1 ? slackUnits : floorDiv(slackUnits, limit.intervalUnits);
}

/**
 * Decides whether `charges` fit at `nowMs` (whole ms; a fraction is dropped)
 * and, only if every limit of every charge fits, charges all of them. A
 * denial charges nothing. A key met twice in one call (the same subject,
 * category and limit in two charges) is one spend of the summed cost.
 * Throws RangeError for a cost that is not a whole number in 0..MAX_COST (a bug).
 */
export function admit(table: LimiterTable, charges: readonly Charge[], nowMs: number): Decision {
  const t = Math.floor(nowMs);
  const pending = table.pending;
  let entries = 0;
  let retryAfterMs = 0;
  let deniedChargeIndex = -1;
  let worstEntry = -1;

  for (let c = 0; c < charges.length; c++) {
    const charge = charges[c]!;
    const cost = charge.cost;
    if (!(Number.isInteger(cost) && cost >= 0 && cost <= MAX_COST)) throw new RangeError(`charge ${c}: cost must be a whole number in 0..${MAX_COST}`);
    const limits = charge.limits;
    if (cost === 0 || limits.length === 0) continue;
    table.hashKey(charge.subject, charge.category);
    for (let j = 0; j < limits.length; j++) {
      const limit = limits[j]!;
      const setHash = table.setHashOf(limit);
      const tag = table.tagOf(limit);
      let entry = entries - 1;
      while (entry >= 0 && (pending.setHash[entry] !== setHash || pending.tag[entry] !== tag)) entry--;
      let total = cost;
      let dUnits: number; // E − t, in units
      if (entry >= 0) {
        total += pending.cost[entry]!;
        dUnits = pending.preRelUnits[entry]!;
      } else {
        if (entries === pending.capacity) pending.grow();
        entry = entries++;
        const slot = table.find(table.setBaseFor(setHash), tag);
        dUnits = table.relUnits(slot, t, limit.unitsPerMs);
        pending.setHash[entry] = setHash;
        pending.tag[entry] = tag;
        pending.slot[entry] = slot;
        pending.preRelUnits[entry] = dUnits;
        pending.chargeIndex[entry] = c;
        pending.limitIndex[entry] = j;
      }
      const afterUnits = dUnits + total * limit.intervalUnits;
      // Oversize (cost > burst): fits only when E = t, and then waits out the whole spend.
      const delayUnits = total <= limit.burst ? afterUnits - limit.toleranceUnits : dUnits;
      pending.cost[entry] = total;
      if (delayUnits <= 0) {
        pending.relUnits[entry] = afterUnits;
      } else {
        pending.relUnits[entry] = dUnits;
        const delayMs = ceilDiv(delayUnits, limit.unitsPerMs);
        if (delayMs > retryAfterMs) {
          retryAfterMs = delayMs;
          deniedChargeIndex = c;
          worstEntry = entry;
        }
      }
    }
  }

  if (entries === 0) return ALLOWED_UNMETERED;
  if (deniedChargeIndex >= 0) {
    const limit = charges[pending.chargeIndex[worstEntry]!]!.limits[pending.limitIndex[worstEntry]!]!;
    const relUnits = pending.preRelUnits[worstEntry]!;
    return {
      allowed: false,
      retryAfterMs,
      deniedChargeIndex,
      tightest: { chargeIndex: deniedChargeIndex, limit, remaining: remainingOf(limit, relUnits), resetMs: ceilDiv(relUnits, limit.unitsPerMs) },
    };
  }

  // Everything fits: charge every key, and find the tightest for the headers.
  let tightEntry = 0;
  let tightRemaining = Number.MAX_SAFE_INTEGER;
  let tightResetMs = -1;
  for (let k = 0; k < entries; k++) {
    const limit = charges[pending.chargeIndex[k]!]!.limits[pending.limitIndex[k]!]!;
    const relUnits = pending.relUnits[k]!;
    const resetMs = table.write(pending.slot[k]!, pending.setHash[k]!, pending.tag[k]!, t, relUnits, limit.unitsPerMs);
    const remaining = remainingOf(limit, relUnits);
    if (remaining < tightRemaining || (remaining === tightRemaining && resetMs > tightResetMs)) {
      tightEntry = k;
      tightRemaining = remaining;
      tightResetMs = resetMs;
    }
  }
  const chargeIndex = pending.chargeIndex[tightEntry]!;
  return {
    allowed: true,
    retryAfterMs: 0,
    deniedChargeIndex: -1,
    tightest: { chargeIndex, limit: charges[chargeIndex]!.limits[pending.limitIndex[tightEntry]!]!, remaining: tightRemaining, resetMs: tightResetMs },
  };
}

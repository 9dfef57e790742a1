// The admission decision: exact GCRA over every limit of every
// charge, all or nothing.
//
// Per (subject, category, limit) the state is one instant TAT. At whole-ms time
// t a spend of cost n has E = max(TAT, t) and fits when E + n·T − t <= B·T, or,
// when n > B, when E = t (an oversize spend is admitted whole once everything
// before it is earned back). Admitted: TAT = E + n·T. All arithmetic is in the
// limit's own exact units (see limit.ts), so no rounding can flip a decision or
// move a retry delay by a millisecond.
import { ceilDiv, floorDiv } from "./exact-division";
import type { LimiterTable } from "./limiter-table";
import { MAX_COST, MAX_EXACT_UNITS, type Limit } from "./limit";

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
  /** Denied: every limit the spend did not fit (the 429's `violated-policies`); absent means only `tightest`'s. */
  readonly violated?: readonly PolicyRef[];
}

/** A limit of one charge: charges[chargeIndex], one of its limits. */
export interface PolicyRef {
  readonly chargeIndex: number;
  readonly limit: Limit;
}

const ALLOWED_UNMETERED: Decision = Object.freeze({ allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: null });

/** Whole cost-1 spends that still fit a state of TAT − t = relUnits: floor((B·T − (E − t)) / T), at least 0. */
/**
 * A response-priced debt as a move of one state, `relUnits`
 * ahead of now: `units` charged whatever the limit says, even past the
 * burst, but capped at MAX_EXACT_UNITS − MAX_COST·T ahead so that one admit()
 * check on top stays exact. The limiter table's settlement and the ledger's
 * both move states with it.
 */
export function debtUnitsAfter(limit: Limit, relUnits: number, units: number): number {
  const capUnits = MAX_EXACT_UNITS - MAX_COST * limit.intervalUnits;
  if (units === 0 || relUnits >= capUnits) return relUnits;
  // units·T may pass 2^53: compare in spends first.
  return units > floorDiv(capUnits - relUnits, limit.intervalUnits) ? capUnits : relUnits + units * limit.intervalUnits;
}

/** A response-priced refund as a move: `units` given back, never before now (0: no state left). */
export function refundUnitsAfter(limit: Limit, relUnits: number, units: number): number {
  return units >= ceilDiv(relUnits, limit.intervalUnits) ? 0 : relUnits - units * limit.intervalUnits;
}

export function remainingOf(limit: Limit, relUnits: number): number {
  const slackUnits = limit.toleranceUnits - relUnits;
  if (slackUnits <= 0) return 0;
  return limit.intervalUnits === 1 ? slackUnits : floorDiv(slackUnits, limit.intervalUnits);
}

// One charge with one limit (the admin token, the auth-failure gate, a caller
// without a tenant): the same rule as admit()'s loops below, without the
// scratch arrays, which cost about a fifth of a decision. The property tests
// hold both paths to the reference model.
function admitOne(table: LimiterTable, charge: Charge, limit: Limit, t: number, write: boolean, placeMs: number): Decision {
  const cost = charge.cost;
  table.hashKey(charge.subject, charge.category);
  const setHash = table.setHashOf(limit);
  const tag = table.tagOf(limit);
  const slot = table.find(setHash, tag);
  const preAheadMs = table.aheadMs(slot, t);
  const preDeficit = preAheadMs === 0 ? 0 : table.deficit(slot);
  const unitsPerMs = limit.unitsPerMs;
  const dUnits = preAheadMs * unitsPerMs - preDeficit;
  const afterUnits = dUnits + cost * limit.intervalUnits;
  const delayUnits = cost <= limit.burst ? afterUnits - limit.toleranceUnits : dUnits;
  if (delayUnits > 0) {
    return {
      allowed: false,
      retryAfterMs: ceilDiv(delayUnits, unitsPerMs),
      deniedChargeIndex: 0,
      tightest: { chargeIndex: 0, limit, remaining: remainingOf(limit, dUnits), resetMs: ceilDiv(dUnits, unitsPerMs) },
      violated: [{ chargeIndex: 0, limit }],
    };
  }
  const x = cost * limit.intervalRemUnits - preDeficit;
  const roundUpMs = x <= 0 ? 0 : x <= unitsPerMs ? 1 : ceilDiv(x, unitsPerMs);
  const resetMs = preAheadMs + cost * limit.intervalWholeMs + roundUpMs;
  if (write) table.write(slot, setHash, tag, placeMs, resetMs + (t - placeMs), roundUpMs * unitsPerMs - x);
  return { allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: { chargeIndex: 0, limit, remaining: remainingOf(limit, afterUnits), resetMs } };
}

function isCost(cost: number): boolean {
  return cost >= 0 && cost <= MAX_COST && (cost | 0) === cost;
}

/**
 * Decides whether `charges` fit at `nowMs` (whole ms; a fraction is dropped)
 * and, only if every limit of every charge fits, charges all of them. Shadow
 * limits are left out: neither decided nor charged (see shadow.ts). A
 * denial charges nothing. A key met twice in one call (the same subject,
 * category and limit in two charges) is one spend of the summed cost.
 * Throws RangeError for a cost that is not a whole number in 0..MAX_COST (a bug).
 */
export function admit(table: LimiterTable, charges: readonly Charge[], nowMs: number): Decision {
  return decide(table, charges, nowMs, true, nowMs);
}

/**
 * admit() as of a later whole-ms instant `atMs` (a request held until then,
 * src/limits/delay.ts), the table placing the new states as of `nowMs`: a
 * state another key holds until some instant between now and atMs is still
 * live now, and must not be taken for a free slot.
 */
export function admitAt(table: LimiterTable, charges: readonly Charge[], atMs: number, nowMs: number): Decision {
  return decide(table, charges, atMs, true, Math.min(Math.floor(nowMs), Math.floor(atMs)));
}

/**
 * The Decision admit() would return, charging nothing: "would this spend fit
 * now?" The auth-failure gate asks it before every credential lookup (docs/design.md,
 * pipeline step 2); only a refused credential is then charged with admit(). For an
 * allowed answer, `tightest` describes the state as it would be after the spend.
 */
export function wouldAdmit(table: LimiterTable, charges: readonly Charge[], nowMs: number): Decision {
  return decide(table, charges, nowMs, false, nowMs);
}

// placeMs (<= nowMs): the instant the table's slot housekeeping runs at (admitAt's now); the decision itself is at nowMs.
function decide(table: LimiterTable, charges: readonly Charge[], nowMs: number, write: boolean, placeMs: number): Decision {
  const t = Math.floor(nowMs);
  const place = Math.floor(placeMs);
  if (charges.length === 1) {
    const only = charges[0]!;
    if (only.limits.length === 1 && only.cost > 0 && isCost(only.cost) && !only.limits[0]!.shadow) return admitOne(table, only, only.limits[0]!, t, write, place);
  }
  let most = 0;
  for (let c = 0; c < charges.length; c++) most += charges[c]!.limits.length;
  const pending = table.pending;
  if (most > pending.capacity) pending.reserve(most);
  // The scratch arrays in locals: reserve() above is the only thing that replaces them.
  const pSetHash = pending.setHash;
  const pTag = pending.tag;
  const pSlot = pending.slot;
  const pPreAheadMs = pending.preAheadMs;
  const pPreDeficit = pending.preDeficit;
  const pRelUnits = pending.relUnits;
  const pCost = pending.cost;
  const pChargeIndex = pending.chargeIndex;
  const pLimitIndex = pending.limitIndex;
  let entries = 0;
  let retryAfterMs = 0;
  let deniedChargeIndex = -1;
  let worstEntry = -1;
  // Entries some spend did not fit (allocated only for a denial).
  let violated: number[] | null = null;

  for (let c = 0; c < charges.length; c++) {
    const charge = charges[c]!;
    const cost = charge.cost;
    if (!isCost(cost)) throw new RangeError(`charge ${c}: cost must be a whole number in 0..${MAX_COST}`);
    const limits = charge.limits;
    if (cost === 0 || limits.length === 0) continue;
    table.hashKey(charge.subject, charge.category);
    for (let j = 0; j < limits.length; j++) {
      const limit = limits[j]!;
      // A shadow limit is decided beside the enforced ones (src/engine/shadow.ts), never with them.
      if (limit.shadow) continue;
      const setHash = table.setHashOf(limit);
      const tag = table.tagOf(limit);
      let entry = entries - 1;
      while (entry >= 0 && (pSetHash[entry] !== setHash || pTag[entry] !== tag)) entry--;
      let total = cost;
      let preAheadMs: number;
      let preDeficit: number;
      if (entry >= 0) {
        total += pCost[entry]!;
        preAheadMs = pPreAheadMs[entry]!;
        preDeficit = pPreDeficit[entry]!;
      } else {
        entry = entries++;
        const slot = table.find(setHash, tag);
        preAheadMs = table.aheadMs(slot, t);
        preDeficit = preAheadMs === 0 ? 0 : table.deficit(slot);
        pSetHash[entry] = setHash;
        pTag[entry] = tag;
        pSlot[entry] = slot;
        pPreAheadMs[entry] = preAheadMs;
        pPreDeficit[entry] = preDeficit;
        pChargeIndex[entry] = c;
        pLimitIndex[entry] = j;
      }
      const dUnits = preAheadMs * limit.unitsPerMs - preDeficit; // E − t, in units
      const afterUnits = dUnits + total * limit.intervalUnits;
      // Oversize (cost > burst): fits only when E = t, and then waits out the whole spend.
      const delayUnits = total <= limit.burst ? afterUnits - limit.toleranceUnits : dUnits;
      pCost[entry] = total;
      if (delayUnits <= 0) {
        pRelUnits[entry] = afterUnits;
      } else {
        pRelUnits[entry] = dUnits;
        if (violated === null) violated = [entry];
        else if (!violated.includes(entry)) violated.push(entry);
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
    const limit = charges[pChargeIndex[worstEntry]!]!.limits[pLimitIndex[worstEntry]!]!;
    const relUnits = pRelUnits[worstEntry]!;
    return {
      allowed: false,
      retryAfterMs,
      deniedChargeIndex,
      tightest: { chargeIndex: deniedChargeIndex, limit, remaining: remainingOf(limit, relUnits), resetMs: ceilDiv(relUnits, limit.unitsPerMs) },
      violated: violated!.map((e) => ({ chargeIndex: pChargeIndex[e]!, limit: charges[pChargeIndex[e]!]!.limits[pLimitIndex[e]!]! })),
    };
  }

  // Everything fits: charge every key, and find the tightest for the headers.
  let tightEntry = 0;
  let tightRemaining = Number.MAX_SAFE_INTEGER;
  let tightResetMs = -1;
  for (let k = 0; k < entries; k++) {
    const limit = charges[pChargeIndex[k]!]!.limits[pLimitIndex[k]!]!;
    const unitsPerMs = limit.unitsPerMs;
    // TAT − t = preAheadMs − preDeficit/q + n·T with T = wholeMs + rem/q: whole ms
    // plus x/q, where −q < x; rounding up needs a division only when x > q.
    const n = pCost[k]!;
    const x = n * limit.intervalRemUnits - pPreDeficit[k]!;
    const roundUpMs = x <= 0 ? 0 : x <= unitsPerMs ? 1 : ceilDiv(x, unitsPerMs);
    const resetMs = pPreAheadMs[k]! + n * limit.intervalWholeMs + roundUpMs;
    if (write) table.write(pSlot[k]!, pSetHash[k]!, pTag[k]!, place, resetMs + (t - place), roundUpMs * unitsPerMs - x);
    const remaining = remainingOf(limit, pRelUnits[k]!);
    if (remaining < tightRemaining || (remaining === tightRemaining && resetMs > tightResetMs)) {
      tightEntry = k;
      tightRemaining = remaining;
      tightResetMs = resetMs;
    }
  }
  const chargeIndex = pChargeIndex[tightEntry]!;
  return {
    allowed: true,
    retryAfterMs: 0,
    deniedChargeIndex: -1,
    tightest: { chargeIndex, limit: charges[chargeIndex]!.limits[pLimitIndex[tightEntry]!]!, remaining: tightRemaining, resetMs: tightResetMs },
  };
}

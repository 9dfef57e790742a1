// The figures a run is judged by: percentiles, per-second series, what one
// exact GCRA would have admitted of the same requests, and the worst window
// of admitted units against the exact figure B + Δ·C/W.
import { EMPTY_STATE, type GcraState, grantLease } from "../../src/engine/ledger-gcra";
import type { Limit } from "../../src/engine/limit";

/** The q-quantile (0..1) of `values` by nearest rank; null when there are none. */
export function quantile(values: readonly number[], q: number): number | null {
  if (values.length === 0) return null;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** Adds `n` to the bucket of second floor(atMs / 1000). */
export function addAt(perS: number[], atMs: number, n = 1): void {
  const s = Math.floor(atMs / 1000);
  while (perS.length <= s) perS.push(0);
  perS[s]! += n;
}

/** An exact GCRA of `limit` alone, fed requests in time order: what a single limiter with no distance would admit. */
export class ExactGcra {
  readonly #limit: Limit;
  #state: GcraState = EMPTY_STATE;
  admittedUnits = 0;
  readonly perS: number[] = [];

  constructor(limit: Limit) {
    this.#limit = limit;
  }

  offer(cost: number, atMs: number): boolean {
    const outcome = grantLease(this.#limit, this.#state, cost, cost, atMs);
    if (!outcome.granted) return false;
    this.#state = outcome.state;
    this.admittedUnits += cost;
    addAt(this.perS, atMs, cost);
    return true;
  }
}

/** Admitted spends, in the order they were admitted (non-decreasing times). */
export interface Spends {
  readonly atMs: number[];
  readonly cost: number[];
}

/**
 * The most, over every window [a, b] of admitted spends, by which the units
 * admitted in it passed what one exact GCRA admits in the same window,
 * B + (b − a)·C/W: in units (≤ 0 everywhere: never past the exact figure;
 * the published bound allows up to L·C/W). O(n) over the spends.
 */
export function worstExcessUnits(limit: Limit, spends: Spends): number {
  const W = limit.windowMs;
  const C = limit.count;
  let before = 0; // units admitted before the current instant
  let bestStart = Number.NEGATIVE_INFINITY; // max over window starts a of (a·C − units before a·W)
  let worst = Number.NEGATIVE_INFINITY;
  const n = spends.atMs.length;
  for (let k = 0; k < n; ) {
    const t = Math.floor(spends.atMs[k]!);
    bestStart = Math.max(bestStart, t * C - before * W);
    while (k < n && Math.floor(spends.atMs[k]!) === t) before += spends.cost[k++]!;
    worst = Math.max(worst, before * W - t * C + bestStart - limit.burst * W);
  }
  return n === 0 ? 0 : worst / W;
}

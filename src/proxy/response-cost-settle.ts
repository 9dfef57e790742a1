// What a priced response settles once its cost is known: the
// reserve was spent before forwarding; the actual cost n replaces it.

import type { CostResult } from "./response-cost-result";

/**
 * - `none`: the reserve stands (no cost found, or n equals the reserve);
 * - `debt`: charge `units` = n − reserve more, unconditionally (even past the
 *   burst: the caller then waits until the rate has earned it back);
 * - `refund`: give back `units` = reserve − n (never before now: a refund
 *   cannot leave credit beyond a fresh state).
 */
export type Settlement = { readonly kind: "none" } | { readonly kind: "debt"; readonly units: number } | { readonly kind: "refund"; readonly units: number };

const NONE: Settlement = Object.freeze({ kind: "none" });

/** The difference between the reserve already spent and the actual cost. */
export function settlementFor(reserveUnits: number, result: CostResult): Settlement {
  if (!result.found || result.cost === reserveUnits) return NONE;
  return result.cost > reserveUnits ? { kind: "debt", units: result.cost - reserveUnits } : { kind: "refund", units: reserveUnits - result.cost };
}

/** The units metered as `units:<category>`: the actual cost, or the reserve when none was found (what the caller was charged). */
export function meteredUnits(reserveUnits: number, result: CostResult): number {
  return result.found ? result.cost : reserveUnits;
}

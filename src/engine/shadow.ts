// Shadow limits: decided beside the enforced limits, never with them. A
// request the enforced limits admit is then charged to each shadow limit
// its spend fits, exactly as that limit would be charged if it were
// enforced alone beside the others; a shadow limit it does not fit is
// charged nothing and reported (the request goes on). The enforced decision
// is never changed by a shadow limit: admit() leaves them out, and nothing
// here runs unless it admitted.
//
// Each shadow limit is decided on its own (the same subject, category and
// figures met in two charges are one spend of the summed cost), so two
// shadow limits never decide for each other either: each reports what it
// alone would do once switched on.
import { admit, type Charge } from "./gcra";
import { enforcedTwin, hasShadow, type Limit, sameLimit } from "./limit";
import type { LimiterTable } from "./limiter-table";

/** What one shadow limit made of a request the enforced limits admitted. */
export interface ShadowVerdict {
  /** The first charge holding the limit (its subject and category). */
  readonly chargeIndex: number;
  readonly limit: Limit;
  /** Charged (it fits), or not (it would have refused). */
  readonly admitted: boolean;
  /** Would have refused: the exact retry delay it would have answered, in ms; 0 when admitted. */
  readonly retryAfterMs: number;
}

/** Whether any charge with a cost holds a shadow limit (nothing to decide otherwise). */
export function chargesHaveShadow(charges: readonly Charge[]): boolean {
  for (let c = 0; c < charges.length; c++) {
    const charge = charges[c]!;
    if (charge.cost > 0 && hasShadow(charge.limits)) return true;
  }
  return false;
}

/**
 * Decides and charges every shadow limit of `charges` at `nowMs`, each on
 * its own; call it only for a request the enforced limits admitted.
 */
export function decideShadow(table: LimiterTable, charges: readonly Charge[], nowMs: number): ShadowVerdict[] {
  const verdicts: ShadowVerdict[] = [];
  for (let c = 0; c < charges.length; c++) {
    const charge = charges[c]!;
    if (charge.cost === 0) continue;
    for (const limit of charge.limits) {
      if (!limit.shadow || verdicts.some((v) => sameSpend(charges[v.chargeIndex]!, v.limit, charge, limit))) continue;
      const twin = enforcedTwin(limit);
      // Every spend of the request on this (subject, category, limit): admit() sums them as one.
      const spends: Charge[] = [];
      for (let k = c; k < charges.length; k++) {
        const other = charges[k]!;
        if (other.cost > 0 && other.subject === charge.subject && other.category === charge.category && other.limits.some((l) => l.shadow && sameLimit(l, limit))) {
          spends.push({ subject: other.subject, category: other.category, limits: [twin], cost: other.cost });
        }
      }
      const decision = admit(table, spends, nowMs);
      verdicts.push({ chargeIndex: c, limit, admitted: decision.allowed, retryAfterMs: decision.retryAfterMs });
    }
  }
  return verdicts;
}

function sameSpend(a: Charge, aLimit: Limit, b: Charge, bLimit: Limit): boolean {
  return a.subject === b.subject && a.category === b.category && sameLimit(aLimit, bLimit);
}

/**
 * The charges as they were charged: a shadow limit that refused is left out
 * of its charges' limits (it holds nothing of this request, so a settlement
 * or a give-back must not touch it). The same array when none refused.
 */
export function asCharged(charges: readonly Charge[], verdicts: readonly ShadowVerdict[]): readonly Charge[] {
  const refused = verdicts.filter((v) => !v.admitted);
  if (refused.length === 0) return charges;
  return charges.map((charge) => {
    const drop = (limit: Limit) => limit.shadow && refused.some((v) => sameSpend(charges[v.chargeIndex]!, v.limit, charge, limit));
    return charge.limits.some(drop) ? { ...charge, limits: charge.limits.filter((l) => !drop(l)) } : charge;
  });
}

/** The charges with every shadow limit left out: what a refused request held (nothing of a shadow limit). */
export function withoutShadow(charges: readonly Charge[]): readonly Charge[] {
  if (!chargesHaveShadow(charges)) return charges;
  return charges.map((charge) => (hasShadow(charge.limits) ? { ...charge, limits: charge.limits.filter((l) => !l.shadow) } : charge));
}

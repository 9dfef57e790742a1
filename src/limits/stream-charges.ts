// What a stream is charged besides its open's request charges:
// `stream_rent` at the open and each period, and, when the caller has limits
// for it, `message` per client message. The subjects are the open's own
// (rate-limit.ts chargedSubjects): the caller, its tenant, and for anonymous
// callers the `anonymous` aggregate. A stream resolves its limits once, at
// the open: a limit changed while it is open applies to the streams opened after.
import type { Charge } from "../engine/gcra";
import { resolveLimits } from "../engine/resolve-limits";
import type { ChargedSubject } from "./rate-limit";

export const STREAM_RENT_CATEGORY = "stream_rent";
export const MESSAGE_CATEGORY = "message";
/** Units of `stream_rent` per period, the open's included. */
export const STREAM_RENT_PER_PERIOD = 1;
/** Units of `message` per client message. */
export const MESSAGE_COST = 1;

/** `cost` units of one category on every subject. */
export function categoryCharges(subjects: readonly ChargedSubject[], category: string, cost: number): Charge[] {
  return subjects.map(({ kind, subject, sources }) => ({ subject, category, limits: resolveLimits(category, kind, sources), cost }));
}

/** The open's prepaid rent, added to the open's own charges so that both are admitted all or nothing. */
export function addOpenRent(charges: Charge[], subjects: readonly ChargedSubject[]): void {
  for (const charge of categoryCharges(subjects, STREAM_RENT_CATEGORY, STREAM_RENT_PER_PERIOD)) charges.push(charge);
}

/**
 * The charges that carry a limit. admit() skips the others anyway; leaving
 * them out once, at the open, lets a caller limited on one subject take
 * admit()'s single-limit path on every message and every rent period.
 */
export function limitedCharges(charges: readonly Charge[]): Charge[] {
  return charges.filter((charge) => charge.limits.length > 0);
}

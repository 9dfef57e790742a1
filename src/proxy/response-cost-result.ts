// What reading a cost out of an origin's answer found, and the one rule that
// turns a number the origin wrote into a cost.

/**
 * The outcome of looking for a response's cost. Not found is an ordinary
 * outcome (the reserve stands), never an error:
 * - `absent`: the answer does not carry the cost (no header, no such path,
 *   no SSE event carrying it, a body that is not JSON or SSE, no body);
 * - `malformed`: it carries something unusable (a negative number, a
 *   fraction of a header, a string, a number above MAX_RESPONSE_COST, a
 *   body that is not well-formed JSON);
 * - `too_large`: the JSON body passed MAX_JSON_INSPECT_BYTES, or every SSE
 *   event that might have carried it passed MAX_SSE_EVENT_BYTES;
 * - `aborted`: the origin's body broke off (it errored, or the tap stopped
 *   reading after the client left) before a cost was found.
 */
export type CostResult = { readonly found: true; readonly cost: number } | { readonly found: false; readonly reason: CostMissing };
export type CostMissing = "absent" | "malformed" | "too_large" | "aborted";

/**
 * The largest cost an answer may report (a billion units: tokens, bytes).
 * A larger figure is taken for garbage, not charged. How much of a large
 * debt the limits can hold is the engine's bound, not this one.
 */
export const MAX_RESPONSE_COST = 1_000_000_000;

export const NOT_FOUND: { readonly [reason in CostMissing]: CostResult } = Object.freeze({
  absent: Object.freeze({ found: false, reason: "absent" }),
  malformed: Object.freeze({ found: false, reason: "malformed" }),
  too_large: Object.freeze({ found: false, reason: "too_large" }),
  aborted: Object.freeze({ found: false, reason: "aborted" }),
});

export function costFound(cost: number): CostResult {
  return { found: true, cost };
}

/**
 * The cost a JSON number stands for: a fraction rounds up (0.2 units still
 * cost 1; an origin that prices in fractions is never undercharged), −0 is
 * 0. Null for a negative or non-finite number or one above MAX_RESPONSE_COST.
 */
export function costOfNumber(value: number): number | null {
  if (!(value >= 0)) return null;
  const cost = Math.ceil(value) + 0;
  return cost <= MAX_RESPONSE_COST ? cost : null;
}

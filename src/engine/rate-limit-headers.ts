// Rate-limit header values for a decision's tightest limit.
//
// RateLimit-Policy and RateLimit follow draft-ietf-httpapi-ratelimit-headers-11
// (23 May 2026): both are Structured Field Lists whose items are a String
// naming the policy, with parameters
//   RateLimit-Policy: "<name>";q=<quota>;w=<window seconds>
//   RateLimit:        "<name>";r=<available quota>;t=<effective window seconds>
// w and t are whole seconds (the draft has no sub-second precision), so w is
// left out for a window that is not a whole number of seconds, and t is
// rounded up. Vendor parameters carry a prefix, as the draft asks:
// tollgate-burst when the burst differs from the count.
//
// Choices for GCRA:
// - q/w are the sustained rate as configured (count per window_s).
// - r is the number of cost-1 spends admitted right now, after this decision;
//   it can exceed q when the burst is larger than the count.
// - t and X-RateLimit-Reset are the seconds until the limit is fully earned
//   back (r is back to the burst).
// - X-RateLimit-Limit is q, the same limit RateLimit-Policy describes (count
//   per window_s); X-RateLimit-Remaining is r, so with a burst larger than
//   the count Remaining can exceed Limit (up to the burst, which the policy
//   carries as tollgate-burst).
// The policy name is "<category>-<subject kind>-<window>", e.g.
// "request-ip-60s": never the subject itself, so no caller key, address or
// credential reaches a header.
import type { Charge, Decision } from "./gcra";
import type { Limit } from "./limit";
import { subjectKindOf } from "./resolve-limits";

export type HeaderList = readonly (readonly [name: string, value: string])[];

const NO_HEADERS: HeaderList = Object.freeze([]);

/** Retry-After for a denial: whole seconds, rounded up (a 1 ms delay is 1 s). */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.ceil(retryAfterMs / 1000);
}

function windowLabel(limit: Limit): string {
  return limit.windowMs % 1000 === 0 ? `${limit.windowMs / 1000}s` : `${limit.windowMs}ms`;
}

/** The policy name: safe as a Structured Field String (no quote or backslash), and free of any subject. */
export function policyName(category: string, subject: string, limit: Limit): string {
  const safeCategory = category.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 32);
  return `${safeCategory}-${subjectKindOf(subject) ?? "subject"}-${windowLabel(limit)}`;
}

/**
 * RateLimit-Policy, RateLimit and X-RateLimit-Limit / -Remaining / -Reset for
 * the decision's tightest limit; empty when nothing was metered. Retry-After
 * is not included: see retryAfterSeconds.
 */
export function rateLimitHeaders(decision: Decision, charges: readonly Charge[]): HeaderList {
  const figures = decision.tightest;
  if (figures === null) return NO_HEADERS;
  const charge = charges[figures.chargeIndex];
  if (charge === undefined) throw new RangeError("decision does not belong to these charges");
  const limit = figures.limit;
  const name = policyName(charge.category, charge.subject, limit);
  const resetS = Math.ceil(figures.resetMs / 1000);
  let policy = `"${name}";q=${limit.count}`;
  if (limit.windowMs % 1000 === 0) policy += `;w=${limit.windowMs / 1000}`;
  if (limit.burst !== limit.count) policy += `;tollgate-burst=${limit.burst}`;
  return [
    ["RateLimit-Policy", policy],
    ["RateLimit", `"${name}";r=${figures.remaining};t=${resetS}`],
    ["X-RateLimit-Limit", String(limit.count)],
    ["X-RateLimit-Remaining", String(figures.remaining)],
    ["X-RateLimit-Reset", String(resetS)],
  ];
}

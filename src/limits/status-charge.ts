// Charges by the origin's status (a route's `charge_on_status`): for a login
// endpoint, 5 failed logins per 15 minutes per address, while successes cost
// nothing. The route's charges are not taken at admission. Before the call
// the rate-limit step asks whether they would fit (wouldAdmit: charging
// nothing) and refuses a caller with no room left, before the origin sees
// the request. Once the origin has answered with a status the route names,
// settleStatusCharge takes them whatever the limits say (a debt, exactly as
// a response-priced charge's), so concurrent calls of one caller may pass the
// limit by at most the number of them in flight: each was checked before any
// was charged. The settlement runs in the forward's settlement, under
// waitUntil, before the answer is built: the answer's RateLimit headers
// include the charge, and a client that hangs up is charged all the same.
//
// These charges are metered in the isolate's limiter table, a global-scope
// limit included (in the state the table keeps for it apart from the
// ledger's): a peek cannot be asked of the ledger without taking units.
import type { Exchange } from "../context";
import type { Charge, Decision, HeaderFigures } from "../engine/gcra";
import { type HeaderList, rateLimitHeaders } from "../engine/rate-limit-headers";
import { type StatusSet, statusMatches } from "../engine/status-match";
import { chargeDebt } from "../proxy/response-cost-gcra";

/** A request's charges deferred to the origin's status, kept by the rate-limit step. */
export interface StatusCharge {
  readonly statuses: StatusSet;
  /** The route's charges on each subject, with the limits in force at admission. */
  readonly deferred: readonly Charge[];
  /** The charges admitted with the request (they come first in the headers' policy list). */
  readonly admitted: readonly Charge[];
  /** The admission's tightest limit, to compare with the settlement's. */
  readonly tightest: HeaderFigures | null;
}

function tighter(a: HeaderFigures, b: HeaderFigures | null): boolean {
  return b === null || a.remaining < b.remaining || (a.remaining === b.remaining && a.resetMs > b.resetMs);
}

/**
 * Takes the deferred charges when `status` is one the route names; returns
 * the RateLimit headers to answer with instead (every policy, the settled
 * one when it is now the tightest), or null when nothing was charged.
 */
export function settleStatusCharge(x: Exchange, status: number, nowMs: number): HeaderList | null {
  const pending = x.statusCharge;
  if (pending === null) return null;
  x.statusCharge = null;
  if (!statusMatches(pending.statuses, status)) return null;
  const settles = pending.deferred.map((c) => ({ subject: c.subject, category: c.category, limits: c.limits, units: c.cost }));
  const after = chargeDebt(x.runtime.limiter, settles, nowMs).tightest;
  const all = [...pending.admitted, ...pending.deferred];
  const tightest = after !== null && tighter(after, pending.tightest) ? { ...after, chargeIndex: pending.admitted.length + after.chargeIndex } : pending.tightest;
  const decision: Decision = { allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest };
  return rateLimitHeaders(decision, all, x.config.rateLimitHeaders);
}

// Charges by the origin's status (a route's `charge_on_status`): for a login
// endpoint, 5 failed logins per 15 minutes per address, while successes cost
// nothing. The route's charges are taken with the request, all or nothing
// with its other charges (src/limits/rate-limit.ts), so a caller with no room
// left is refused before the origin sees the request, and concurrent calls
// can never pass the limit: 60 logins at once against 2 failures per 900 s
// reach the origin at most twice. Once the origin has answered, a status the
// route does not name gives those charges back, exactly (isolate limits at
// once, global ones through their ledger). The settlement runs in the
// forward's settlement, under waitUntil, before the answer is built: the
// answer's RateLimit headers describe the limits after it, and a client that
// hangs up is settled all the same.
import type { Exchange } from "../exchange";
import type { Charge, Decision } from "../engine/gcra";
import { type HeaderList, rateLimitHeaders } from "../engine/rate-limit-headers";
import { statusMatches } from "../engine/status-match";
import { figuresNow, refund, type SettleCharge } from "../proxy/response-cost-gcra";
import { refundBudgetUnits } from "./budget-settle";

/**
 * Settles the route's charges by `status`: kept when it is one the route
 * names, given back otherwise. Returns the RateLimit headers to answer with
 * instead of the admission's (after a give-back, the limits as they now
 * stand), or null to keep them.
 */
export function settleStatusCharge(x: Exchange, status: number, nowMs: number): HeaderList | null {
  const pending = x.statusCharge;
  if (pending === null) return null;
  x.statusCharge = null;
  if (statusMatches(pending.statuses, status)) return null;
  x.statusChargeReturned = true;
  for (const [category, cost] of x.route?.charges ?? []) refundBudgetUnits(x, category, cost);
  // A shadow-mode request its limits would have refused: they were charged nothing, only its budgets were.
  if (!pending.limitsCharged) return null;
  const { limiter, leases } = x.runtime;
  const local: SettleCharge[] = [];
  let global = false;
  for (let i = pending.deferredFrom; i < pending.deferredTo; i++) {
    const c: Charge = pending.charges[i]!;
    if (c.cost === 0 || c.limits.length === 0) continue;
    const globalLimits = c.limits.filter((l) => l.scope === "global");
    if (globalLimits.length > 0) {
      global = true;
      leases.settle(x.env.LIMIT_LEDGER, x.ctx, limiter, { subject: c.subject, category: c.category, limits: globalLimits, kind: "refund", units: c.cost }, nowMs);
    }
    local.push({ subject: c.subject, category: c.category, limits: globalLimits.length > 0 ? c.limits.filter((l) => l.scope !== "global") : c.limits, units: c.cost });
  }
  refund(limiter, local, nowMs);
  // A global limit's figures are its ledger's: the admission's headers stand.
  if (global) return null;
  // The figures of every policy as they stand now; the route's policies stay listed.
  const tightest = figuresNow(limiter, pending.charges, nowMs);
  if (tightest === null) return null;
  const decision: Decision = { allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest };
  return rateLimitHeaders(decision, pending.charges, x.config.rateLimitHeaders);
}

// Settling a response-priced route: the reserve was charged with
// the request (src/limits/rate-limit.ts); once the origin's answer says what
// the call cost, the difference is charged unconditionally (a debt: the
// caller's next spends wait until the rate has earned it back) or refunded,
// on the same limits the reserve went to. No cost found: the reserve stands.
// Metering adds `units:<category>` to the tenant's month. Global limits settle
// on their ledger, in the background (the headers then describe the isolate
// limits' settlement only).
import type { Exchange } from "../exchange";
import { settleBudgetCost } from "./budget-settle";
import type { Decision } from "../engine/gcra";
import { type HeaderList, rateLimitHeaders } from "../engine/rate-limit-headers";
import { chargeDebt, figuresNow, refund, type SettleCharge, type SettledFigures } from "../proxy/response-cost-gcra";
import type { CostResult } from "../proxy/response-cost-result";
import { meteredUnits, settlementFor } from "../proxy/response-cost-settle";

/**
 * Settles x.priced against `result` at `nowMs`. Returns the RateLimit headers
 * to send instead of the admission's: after a debt that left the caller
 * tighter than the admission's tightest limit, and after a refund (the
 * limits as they now stand); else null.
 */
export function settleResponseCharge(x: Exchange, result: CostResult, nowMs: number, usageMaxPending: number): HeaderList | null {
  const priced = x.priced;
  if (priced === null) return null;
  const charge = priced.charge;
  settleBudgetCost(x, charge.category, charge.reserve, result);
  const tenant = x.tenant;
  if (tenant !== null) x.runtime.meter.add(tenant.slug, `units:${charge.category}`, meteredUnits(charge.reserve, result), nowMs, usageMaxPending);
  // A shadow-mode request its limits would have refused charged them nothing: only its budgets and metering settle.
  if (!priced.limitsCharged) return null;
  const settlement = settlementFor(charge.reserve, result);
  if (settlement.kind === "none") return null;
  const table = x.runtime.limiter;
  const settles: SettleCharge[] = priced.charges.slice(priced.reserveFrom).map((c) => {
    if (!c.limits.some((l) => l.scope === "global")) return { subject: c.subject, category: c.category, limits: c.limits, units: settlement.units };
    const global = c.limits.filter((l) => l.scope === "global");
    x.runtime.leases.settle(x.env.LIMIT_LEDGER, x.ctx, table, { subject: c.subject, category: c.category, limits: global, kind: settlement.kind, units: settlement.units }, nowMs);
    return { subject: c.subject, category: c.category, limits: c.limits.filter((l) => l.scope !== "global"), units: settlement.units };
  });
  const figures: SettledFigures = settlement.kind === "debt" ? chargeDebt(table, settles, nowMs) : refund(table, settles, nowMs);
  const after = figures.tightest;
  const before = priced.tightest;
  if (after === null) return null;
  // Every policy of the request, the reserve's charges at the cost the answer settled on.
  const actual = settlement.kind === "debt" ? charge.reserve + settlement.units : Math.max(0, charge.reserve - settlement.units);
  const charges = priced.charges.map((c, i) => (i < priced.reserveFrom ? c : { subject: c.subject, category: c.category, limits: c.limits, cost: actual }));
  if (settlement.kind === "refund" || charge.reserve === 0) {
    // A refund can leave another policy the tightest, and a debt on a reserve
    // of 0 charges policies the admission's headers did not list: the figures
    // of every policy as they stand now (a settlement of 0 moves nothing). A
    // global limit's figures are its ledger's: the admission's headers stand then.
    if (priced.charges.some((c) => c.limits.some((l) => l.scope === "global"))) return null;
    // The reserve's charges at the settled cost: a refund down to 0 leaves its category's limits unnamed.
    const now = figuresNow(table, charges, nowMs);
    return now === null ? null : rateLimitHeaders({ allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: now }, charges, x.config.rateLimitHeaders);
  }
  if (before !== null && (after.remaining > before.remaining || (after.remaining === before.remaining && after.resetMs <= before.resetMs))) return null;
  const decision: Decision = { allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: { ...after, chargeIndex: priced.reserveFrom + after.chargeIndex } };
  return rateLimitHeaders(decision, charges, x.config.rateLimitHeaders);
}

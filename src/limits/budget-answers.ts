// A budget's refusal as the client gets it (429 budget_exhausted, 402
// credits_exhausted, 503 budget_unavailable, with the budget's RateLimit
// headers), the rate-limit charge it gives back (all or nothing), and the
// threshold audits and alerts the objects hand out.
import { alertAbout } from "../alerts/raise";
import type { Exchange } from "../exchange";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import type { BudgetPlan } from "../durable/budget-client";
import type { BudgetState, BudgetThresholdAudit } from "../durable/budget-types";
import { budgetHeaders, type HeaderList } from "../engine/rate-limit-headers";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import { refund, type SettleCharge } from "../proxy/response-cost-gcra";
import { keepAlive } from "../utils/wait-until";

/** Seconds a client is told to wait when a budget cannot be checked. */
export const BUDGET_UNAVAILABLE_RETRY_AFTER_S = 1;

/** The `budget` member of a refusal. */
function budgetMember(b: BudgetState): Record<string, unknown> {
  return { owner: b.owner, period: b.period, amount: b.amount, used: b.used, resets_at: b.resetsAtMs === null ? null : new Date(b.resetsAtMs).toISOString() };
}

/** The RateLimit headers of a budget's refusal: the budget, with nothing left until it resets. */
function refusalHeaders(x: Exchange, b: BudgetState, nowMs: number, cost: number): HeaderList {
  const ownerKind = b.owner.slice(0, Math.max(0, b.owner.indexOf(":")));
  const periodS = b.periodStartMs === null || b.resetsAtMs === null ? null : Math.round((b.resetsAtMs - b.periodStartMs) / 1000);
  const resetS = b.resetsAtMs === null ? null : Math.max(1, Math.ceil((b.resetsAtMs - nowMs) / 1000));
  return budgetHeaders({ category: b.category, ownerKind, period: b.period, amount: b.amount, periodS, resetS, cost }, x.config.rateLimitHeaders);
}

/** 429 budget_exhausted (Retry-After until the reset) or, for credits, 402 credits_exhausted. */
export function budgetRefusal(b: BudgetState, nowMs: number): { code: "budget_exhausted" | "credits_exhausted"; response: Response } {
  const extras = { category: b.category, budget: budgetMember(b) };
  if (b.resetsAtMs === null) {
    return {
      code: "credits_exhausted",
      response: problem("credits_exhausted", { detail: `The ${b.category} credits of ${b.owner} are spent (${b.used} of ${b.amount}).`, extras }),
    };
  }
  const retryAfterS = Math.max(1, Math.ceil((b.resetsAtMs - nowMs) / 1000));
  return {
    code: "budget_exhausted",
    response: problem("budget_exhausted", {
      detail: `The ${b.category} budget of ${b.owner} for this ${b.period} is spent (${b.used} of ${b.amount}); it resets at ${new Date(b.resetsAtMs).toISOString()}.`,
      extras,
      headers: { "retry-after": String(retryAfterS) },
    }),
  };
}

/** Gives back what the rate-limit step charged this request (isolate limits at once, global ones through their ledger). */
export function refundRateLimits(x: Exchange, nowMs: number): void {
  const charged = x.charged;
  if (charged === null) return;
  x.charged = null;
  const { limiter, leases } = x.runtime;
  const local: SettleCharge[] = [];
  for (const c of charged) {
    if (c.cost === 0 || c.limits.length === 0) continue;
    const global = c.limits.filter((l) => l.scope === "global");
    if (global.length > 0) leases.settle(x.env.LIMIT_LEDGER, x.ctx, limiter, { subject: c.subject, category: c.category, limits: global, kind: "refund", units: c.cost }, nowMs);
    local.push({ subject: c.subject, category: c.category, limits: global.length > 0 ? c.limits.filter((l) => l.scope !== "global") : c.limits, units: c.cost });
  }
  refund(limiter, local, nowMs);
}

/** Writes the `budget_threshold` audit events the objects handed out, in the background. */
export function recordBudgetAudits(x: Exchange, audits: readonly BudgetThresholdAudit[]): void {
  if (audits.length === 0) return;
  const db = database(x.env.DB);
  const tenant = x.tenant?.slug ?? null;
  for (const a of audits) {
    // The objects hand out one event per threshold, budget and period: the alert follows it.
    const org = a.owner.startsWith("org:") ? a.owner.slice("org:".length) : null;
    alertAbout(
      x,
      {
        type: "budget.threshold",
        ...(tenant === null ? {} : { tenant }),
        ...(org === null ? {} : { org }),
        // A shadow budget's thresholds are announced as an enforced one's would be, marked shadow.
        data: { owner: a.owner, category: a.category, period: a.period, threshold: a.threshold, amount: a.amount, used: a.used, ...(a.shadow === true ? { shadow: true } : {}) },
      },
      Date.now(),
      false,
    );
    keepAlive(
      x.ctx,
      insertAuditEvent(db, {
        atMs: Date.now(),
        kind: "budget_threshold",
        actor: "quota",
        tenant: a.owner.startsWith("org:") ? null : tenant,
        subject: a.owner,
        detail: { category: a.category, period: a.period, threshold: a.threshold, amount: a.amount, used: a.used, period_start: a.periodStartMs === null ? null : new Date(a.periodStartMs).toISOString(), ...(a.shadow === true ? { shadow: true } : {}) },
      })
        .run()
        .catch((err: unknown) => log.error("audit_write_failed", { error: errorName(err) })),
    );
  }
}

/** The units of `plan` spent from the budget `b` (what the refusal's `c` says). */
function costIn(plan: BudgetPlan, b: BudgetState): number {
  let units = 0;
  for (const s of [...plan.tenantSpends, ...plan.orgSpends]) if (s.owner === b.owner && s.category === b.category) units += s.units;
  return units;
}

/** A budget's refusal as the answer: its problem, the budget's RateLimit headers, the rate-limit charge given back. */
export function refuseByBudget(x: Exchange, plan: BudgetPlan, b: BudgetState, nowMs: number): Response | null {
  const { code, response } = budgetRefusal(b, nowMs);
  const refused = refuseAll(x, code, response, nowMs);
  // The request's rate limits had room; what refused it is the budget, and its headers say so.
  if (refused !== null) x.rateHeaders = refusalHeaders(x, b, nowMs, costIn(plan, b));
  return refused;
}

export function budgetUnavailable(x: Exchange, nowMs: number): Response | null {
  return refuseAll(
    x,
    "budget_unavailable",
    problem("budget_unavailable", {
      detail: "A budget could not be checked; the request was not forwarded and nothing was spent.",
      headers: { "retry-after": String(BUDGET_UNAVAILABLE_RETRY_AFTER_S) },
    }),
    nowMs,
  );
}

/** A refusal that also gives back the rate-limit charge, when it is the answer (shadow mode forwards, so keeps the charge). */
function refuseAll(x: Exchange, code: "budget_exhausted" | "credits_exhausted" | "budget_unavailable", response: Response, nowMs: number): Response | null {
  const refused = x.refuse(code, response);
  if (refused !== null) refundRateLimits(x, nowMs);
  return refused;
}


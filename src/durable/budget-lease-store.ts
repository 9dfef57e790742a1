// Leases of budgets, held in the same quota object and tables as the budgets
// (budget-store.ts). A lease moves units of a budget to one isolate, counted
// in `used` at grant time: what is spent plus what is leased never passes
// `amount`, so admitted spends never exceed it whatever the isolates do,
// including an isolate that vanishes holding a lease.
//
// - Grant: every item of a call that needs units must fit (a need of 0, a
//   response-priced reserve of 0, needs the budget not spent), or nothing is
//   granted. Each gets what its waiting requests need (`waiting`), and of the
//   `extra` that demand asks for, a share that shrinks as the budget nears its
//   end: at most (remaining − waiting) / (2 · (live leases + 1)). Near the
//   end the extra is 0 and every grant is a single exact spend.
// - Report: the isolate says what it has spent of a lease (`spent`); `used`
//   does not change (the grant already counted it), but the units not yet
//   reported are what the budget may over-state if the isolate is lost.
// - Close: the unspent units (granted − spent) leave `used`, if the lease's
//   period is still the budget's. A lease nobody closes ends at its
//   `expires_at`; its unreported units stay counted (never an under-count),
//   and its row goes LEASE_ROW_RETENTION_MS later (pruned by a call after
//   that call's own closes).
// - Adjust: a debt past a lease, or a refund after its lease closed.
import { type BudgetLeaseAccuracyReport, BudgetLeaseCounter } from "./budget-lease-accuracy";
import type { BudgetAdjustRequest, BudgetLeaseAnswer, BudgetLeaseItem, BudgetLeaseRequest, BudgetLeaseResult } from "./budget-lease-types";
import { BUDGET_LEASE_SQL } from "./budget-sql";
import { type BudgetRows, checkBudgetName, checkBudgetTime, checkBudgetUnits, type LiveBudget } from "./budget-store";
import { type BudgetThresholdAudit, MAX_BUDGET_AMOUNT } from "./budget-types";

/**
 * How long a lease's row is kept after it ended, for a late report or close:
 * an isolate closes an ended lease with its next budgeted request, which may
 * come hours later on a quiet gateway. Past this its unspent units stay
 * counted (as a lost isolate's do).
 */
export const LEASE_ROW_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Items one lease call may carry (a request's budgets, each at up to three owners, and the isolate's reports). */
const MAX_ITEMS = 64;
/** The longest lease an isolate may ask for (budgets.lease_s is at most this). */
export const MAX_BUDGET_LEASE_MS = 10 * 60 * 1000;

type LeaseRow = { id: string; period_start: number; granted: number; spent: number };

function checkItem(item: BudgetLeaseItem): void {
  checkBudgetName(item.owner, "owner");
  checkBudgetName(item.category, "category");
  if (item.need !== null) checkBudgetUnits(item.need, "need");
  checkBudgetUnits(item.waiting, "waiting");
  checkBudgetUnits(item.extra, "extra");
  if (item.lease !== null) {
    checkBudgetName(item.lease.id, "lease.id");
    checkBudgetUnits(item.lease.spent, "lease.spent");
  }
}

/** Whether a spend of `need` fits what is left (a spend of 0 needs something left). */
function fits(live: LiveBudget, need: number): boolean {
  const remaining = live.amount - live.used;
  return need > 0 ? need <= remaining : remaining > 0;
}

export class BudgetLeaseStore {
  readonly #rows: BudgetRows;
  /** Grants and refusals per budget and minute, for GET /global/accuracy (budget-lease-accuracy.ts). */
  readonly #counter = new BudgetLeaseCounter(Date.now());

  constructor(rows: BudgetRows) {
    this.#rows = rows;
  }

  /** Reports and closes the leases the items name, then grants what they need, all or nothing. */
  lease(req: BudgetLeaseRequest): BudgetLeaseResult {
    checkBudgetTime(req.nowMs);
    if (!Array.isArray(req.items) || req.items.length > MAX_ITEMS) throw new TypeError(`budget: items must be a list of at most ${MAX_ITEMS}`);
    if (typeof req.leaseMs !== "number" || !Number.isInteger(req.leaseMs) || req.leaseMs < 1 || req.leaseMs > MAX_BUDGET_LEASE_MS) throw new TypeError(`budget: leaseMs must be a whole number in 1..${MAX_BUDGET_LEASE_MS}`);
    for (const item of req.items) checkItem(item);
    const nowMs = req.nowMs;
    const { sql } = this.#rows;
    return this.#rows.transaction((): BudgetLeaseResult => {
      const audits: BudgetThresholdAudit[] = [];
      for (const item of req.items) if (item.lease !== null) this.#report(item.owner, item.category, item.lease.id, item.lease.spent, item.lease.close, nowMs, audits);
      // After the call's own closes: the first call of an isolate back after a quiet day still finds the rows of the leases it ends.
      sql.exec(BUDGET_LEASE_SQL.prune, nowMs - LEASE_ROW_RETENTION_MS);
      const lives = req.items.map((item) => (item.need === null ? null : this.#rows.live(item.owner, item.category, nowMs)));
      // A shadow budget is decided on its own: one that cannot take its need refuses (and is charged) nothing else.
      const exhausted = req.items.some((item, i) => item.need !== null && lives[i] !== null && !lives[i]!.shadow && !fits(lives[i]!, item.need));
      const answers: BudgetLeaseAnswer[] = req.items.map((item, i): BudgetLeaseAnswer => {
        const live = lives[i] ?? null;
        if (item.need === null) {
          const now = this.#rows.live(item.owner, item.category, nowMs);
          return { status: "reported", budget: now === null ? null : this.#rows.state(now) };
        }
        if (live === null) return { status: "none" };
        if (live.shadow && !fits(live, item.need)) return { status: "exhausted", budget: this.#rows.state(live) };
        // All or nothing: a call one budget refuses grants nothing, so no units sit idle in a lease no request can use.
        if (exhausted) return { status: fits(live, item.need) ? "withheld" : "exhausted", budget: this.#rows.state(live) };
        return this.#grant(item, live, req.leaseMs, nowMs, audits);
      });
      // A refusal while other isolates hold units of the budget (the asker's own lease was closed above).
      answers.forEach((a, i) => {
        if (a.status === "exhausted") this.#counter.refused(req.items[i]!.owner, req.items[i]!.category, this.leased(req.items[i]!.owner, req.items[i]!.category, nowMs) > 0, nowMs);
      });
      return { answers, audits };
    });
  }

  /** Debts past a lease and refunds after one closed, each on its budget (a budget that is gone takes nothing). */
  adjust(req: BudgetAdjustRequest): BudgetThresholdAudit[] {
    checkBudgetTime(req.nowMs);
    if (!Array.isArray(req.adjustments) || req.adjustments.length > MAX_ITEMS) throw new TypeError(`budget: adjustments must be a list of at most ${MAX_ITEMS}`);
    for (const a of req.adjustments) {
      checkBudgetName(a.owner, "owner");
      checkBudgetName(a.category, "category");
      if (typeof a.units !== "number" || !Number.isSafeInteger(a.units)) throw new TypeError("budget: units must be a whole number");
    }
    return this.#rows.transaction(() => {
      const audits: BudgetThresholdAudit[] = [];
      for (const a of req.adjustments) {
        if (a.units === 0) continue;
        const live = this.#rows.live(a.owner, a.category, req.nowMs);
        if (live === null) continue;
        if (a.units > 0) live.used = Math.min(live.used + a.units, MAX_BUDGET_AMOUNT);
        // A refund gives back only to the period the spend was counted in.
        else if (live.period === "none" || a.periodStartMs === live.start) live.used -= Math.min(-a.units, live.used);
        else continue;
        this.#rows.write(live, audits);
      }
      return audits;
    });
  }

  /** Each budget with grants or refusals in the minutes since `sinceMs`: those counts, and its amount, `used` and units leased now. */
  accuracy(req: { sinceMs: number; nowMs: number }): BudgetLeaseAccuracyReport {
    checkBudgetTime(req.nowMs);
    checkBudgetTime(req.sinceMs);
    const budgets = this.#counter.since(req.sinceMs).flatMap((c) => {
      const live = this.#rows.live(c.owner, c.category, req.nowMs);
      if (live === null) return [];
      const state = this.#rows.state(live);
      return [{ ...c, period: state.period, amount: state.amount, used: state.used, leased: this.leased(c.owner, c.category, req.nowMs) }];
    });
    return { budgets, countingSinceMs: this.#counter.startedAtMs };
  }

  /** Units held in live leases of a budget and not reported spent: what its `used` counts ahead of the spend it knows of. */
  leased(owner: string, category: string, nowMs: number): number {
    return this.#rows.sql.exec<{ units: number }>(BUDGET_LEASE_SQL.leasedOf, owner, category, nowMs).one().units;
  }

  #report(owner: string, category: string, id: string, spent: number, close: boolean, nowMs: number, audits: BudgetThresholdAudit[]): void {
    const { sql } = this.#rows;
    const row = sql.exec<LeaseRow>(BUDGET_LEASE_SQL.lease, id, owner, category).toArray()[0];
    if (row === undefined) return;
    const reported = Math.min(spent, row.granted);
    if (!close) {
      sql.exec(BUDGET_LEASE_SQL.report, reported, id);
      return;
    }
    sql.exec(BUDGET_LEASE_SQL.remove, id);
    const unspent = row.granted - reported;
    if (unspent === 0) return;
    const live = this.#rows.live(owner, category, nowMs);
    // Units of an ended period are not given to the next one.
    if (live === null || (live.period !== "none" && live.start !== row.period_start)) return;
    live.used -= Math.min(unspent, live.used);
    this.#rows.write(live, audits);
  }

  #grant(item: BudgetLeaseItem, live: LiveBudget, leaseMs: number, nowMs: number, audits: BudgetThresholdAudit[]): BudgetLeaseAnswer {
    const { sql } = this.#rows;
    const remaining = live.amount - live.used;
    // A need of 0 (a zero reserve) is granted a unit: the lease must show the budget is not spent, and its debt takes it first.
    const base = Math.min(Math.max(item.need ?? 0, item.waiting, 1), remaining);
    const others = sql.exec<{ n: number }>(BUDGET_LEASE_SQL.liveCount, item.owner, item.category, nowMs).one().n;
    const extra = Math.min(item.extra, Math.floor((remaining - base) / (2 * (others + 1))));
    const units = base + Math.max(0, extra);
    live.used += units;
    this.#counter.granted(item.owner, item.category, units, nowMs);
    this.#rows.write(live, audits);
    const state = this.#rows.state(live);
    const expiresAtMs = Math.min(nowMs + leaseMs, state.resetsAtMs ?? Number.POSITIVE_INFINITY);
    const leaseId = crypto.randomUUID();
    sql.exec(BUDGET_LEASE_SQL.insert, leaseId, item.owner, item.category, live.start, units, expiresAtMs, nowMs);
    return { status: "granted", leaseId, units, expiresAtMs, budget: state };
  }
}

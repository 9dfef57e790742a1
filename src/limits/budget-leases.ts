// The isolate's budget leases and their object calls, one per runtime: the
// pure BudgetLeaseBook (src/engine/budget-lease-book.ts) plus what needs I/O
// — one call in flight per quota object (every request that finds its
// leases short meanwhile waits for it, its need counted in the ask), the
// reports and closes sent in the background, and the debts and refunds that
// outlive a lease.
//
// A call belongs to the request that started it, and workerd cancels a
// request's I/O when its client goes away: so it goes to keepAlive, and one
// older than MAX_FLIGHT_MS is presumed dead (as global-leases.ts does).
import { MAX_FLIGHT_MS } from "../cache/read-through-cache";
import { type BudgetAsk, BudgetLeaseBook, type LeaseDebit, type SlotSpend } from "../engine/budget-lease-book";
import { adjustBudgets, type BudgetNamespaces, leaseBudgets } from "../durable/budget-client";
import type { BudgetAdjustment } from "../durable/budget-lease-types";
import type { BudgetThresholdAudit } from "../durable/budget-types";
import { errorName, log } from "../log/logger";
import { type Background, keepAlive } from "../utils/wait-until";

/** Reports and closes are looked for at most this often (each lease is reported at most once a second anyway). */
const REPORT_SCAN_MS = 250;

export interface BudgetLeaseOptions {
  /** budgets.lease_s, in ms. */
  readonly leaseMs: number;
  /** Budgets (object, owner, category) kept in the isolate. */
  readonly maxSlots: number;
}

/** How a wait for an object's answer ended, for the requests that waited. */
export interface FlightOutcome {
  /** The call failed: the object did not answer. */
  readonly failed: boolean;
}

export class BudgetLeases {
  readonly book: BudgetLeaseBook;
  readonly #flights = new Map<string, { readonly done: Promise<FlightOutcome>; readonly startedAtMs: number }>();
  readonly #now: () => number;
  #lastScanMs = 0;

  constructor(options: BudgetLeaseOptions, now: () => number) {
    this.book = new BudgetLeaseBook({ leaseMs: options.leaseMs, maxSlots: options.maxSlots });
    this.#now = now;
  }

  /**
   * The call for `object`'s `shorts`, or the one already in flight: resolves
   * (never rejects) once its answer is applied to the book. A budget that
   * refused is left in its slot's figures, with refusedAtMs set.
   */
  flight(ns: BudgetNamespaces, ctx: Background | null, object: string, shorts: readonly SlotSpend[], audits: (list: readonly BudgetThresholdAudit[]) => void): Promise<FlightOutcome> {
    const nowMs = this.#now();
    const running = this.#flights.get(object);
    if (running !== undefined && nowMs - running.startedAtMs < MAX_FLIGHT_MS) return running.done;
    const ask = this.book.askFor(object, shorts, nowMs);
    // The threshold audits an answer hands out are recorded once, by the request that sent the call.
    const done = this.#send(ns, ask, audits).finally(() => {
      if (this.#flights.get(object)?.done === done) this.#flights.delete(object);
    });
    this.#flights.set(object, { done, startedAtMs: nowMs });
    keepAlive(ctx, done);
    return done;
  }

  /**
   * Closes every lease now (their unspent units go back), in the
   * background: a runtime being replaced (a new configuration) hands back
   * what it holds rather than leave it counted until the leases end.
   */
  closeAll(ns: BudgetNamespaces, ctx: Background | null, nowMs: number, audits: (list: readonly BudgetThresholdAudit[]) => void): Promise<void> {
    this.book.dropAll();
    const due = this.book.reportsDue(nowMs);
    const sent = Promise.all([...due.values()].map((ask) => this.#send(ns, ask, audits))).then(() => undefined);
    keepAlive(ctx, sent);
    return sent;
  }

  /** Sends, in the background, the reports and closes due (at most every REPORT_SCAN_MS); `audits` records what the objects hand out. */
  reportDue(ns: BudgetNamespaces, ctx: Background | null, nowMs: number, audits: (list: readonly BudgetThresholdAudit[]) => void): void {
    if (nowMs - this.#lastScanMs < REPORT_SCAN_MS) return;
    this.#lastScanMs = nowMs;
    const due = this.book.reportsDue(nowMs);
    for (const ask of due.values()) keepAlive(ctx, this.#send(ns, ask, audits));
  }

  /**
   * Gives `units` back for a debit (a release, a refund): to its lease while
   * it lives, else to the object (a refund in the lease's period).
   */
  giveBack(ns: BudgetNamespaces, ctx: Background | null, debit: LeaseDebit, units: number, nowMs: number): void {
    if (units <= 0) return;
    if (this.book.giveBack(debit, units, nowMs)) return;
    this.#adjust(ns, ctx, debit.slot.object, { owner: debit.slot.owner, category: debit.slot.category, units: -units, periodStartMs: debit.periodStartMs }, nowMs);
  }

  /** Charges `units` more for a debit (a debt): from its lease while it lives and has them, the rest at the object. */
  charge(ns: BudgetNamespaces, ctx: Background | null, debit: LeaseDebit, units: number, nowMs: number): void {
    if (units <= 0) return;
    const rest = units - this.book.takeMore(debit, units, nowMs);
    if (rest > 0) this.#adjust(ns, ctx, debit.slot.object, { owner: debit.slot.owner, category: debit.slot.category, units: rest, periodStartMs: debit.periodStartMs }, nowMs);
  }

  #adjust(ns: BudgetNamespaces, ctx: Background | null, object: string, adjustment: BudgetAdjustment, nowMs: number): void {
    keepAlive(
      ctx,
      adjustBudgets(ns, object, { adjustments: [adjustment], nowMs }).catch((err: unknown) => {
        // A debt not delivered leaves `used` short of the spend by it; a refund, over it. Logged, never retried twice.
        log.error("budget_adjust_failed", { error: errorName(err), units: adjustment.units });
      }),
    );
  }

  async #send(ns: BudgetNamespaces, ask: BudgetAsk, audits: (list: readonly BudgetThresholdAudit[]) => void): Promise<FlightOutcome> {
    let result;
    try {
      result = await leaseBudgets(ns, ask.object, {
        items: ask.items.map((item) => ({ owner: item.slot.owner, category: item.slot.category, need: item.need, waiting: item.waiting, extra: item.extra, lease: item.lease })),
        nowMs: ask.askedAtMs,
        leaseMs: this.book.leaseMs,
      });
    } catch (err) {
      log.error("budget_lease_failed", { error: errorName(err) });
      this.book.failed(ask);
      return { failed: true };
    }
    this.book.answered(ask, result.answers, this.#now());
    if (result.audits.length > 0) audits(result.audits);
    return { failed: false };
  }
}

// The isolate's global-limit leases and their ledger calls, one
// per runtime: the pure LeaseBook (src/engine/lease-book.ts) plus what needs
// I/O — the single flight per (subject, category), the give-backs of unspent
// units, and response-priced settlements on the ledger.
//
// Single flight: the first request of a (subject, category) to find its
// leases short sends one ask; every request that finds them short meanwhile
// waits for that same call (its need counted in the ask, lease-book.ts
// waitingUnits). A call belongs to the request that started it, and workerd
// cancels a request's I/O when its client goes away, after which the call
// would never settle and its joiners would hang: so it goes to keepAlive (the
// request's waitUntil), as src/cache/read-through-cache.ts does with loads.
// A call older than MAX_FLIGHT_MS is presumed dead all the same (the runtime
// gives background work 30 s after a response): the next request that finds
// its leases short sends a new ask rather than joining one that may never
// settle.
import { MAX_FLIGHT_MS } from "../cache/read-through-cache";
import type { Limit } from "../engine/limit";
import { LeaseBook } from "../engine/lease-book";
import type { Ask, AskReply, LeaseGroup, LeaseSlot, Short } from "../engine/lease-types";
import type { LimiterTable } from "../engine/limiter-table";
import { askLedger, giveBackToLedger, type LedgerNamespace, settleOnLedger } from "../durable/ledger-client";
import { errorName, log } from "../log/logger";
import { chargeDebt, refund } from "../proxy/response-cost-gcra";
import { type Background, keepAlive } from "../utils/wait-until";

/** After the ledger fails, how long its limits take `global.on_error`'s course before it is asked again. */
const LEDGER_RETRY_MS = 1000;

export interface GlobalLeaseOptions {
  readonly maxOvershoot: number;
  readonly minLeaseMs: number;
  readonly onError: "local" | "deny";
  /** (subject, category) groups kept in the isolate. */
  readonly maxGroups: number;
}

/** How long a refusal from the ledger is kept at least: a quarter of the lease time, so isolates refused together do not ask again in step. */
function holdMs(slot: LeaseSlot): number {
  return Math.ceil(slot.leaseMs / 4);
}

export class GlobalLeases {
  readonly book: LeaseBook;
  readonly onError: "local" | "deny";
  readonly #flights = new Map<LeaseGroup, { readonly done: Promise<void>; readonly startedAtMs: number }>();
  readonly #now: () => number;

  constructor(options: GlobalLeaseOptions, now: () => number) {
    this.book = new LeaseBook({ maxOvershoot: options.maxOvershoot, minLeaseMs: options.minLeaseMs, maxGroups: options.maxGroups, ledgerRetryMs: LEDGER_RETRY_MS });
    this.onError = options.onError;
    this.#now = now;
  }

  /**
   * The ask for `group`'s `shorts`, or the one already in flight: resolves
   * (never rejects) once its answer is applied to the book. A failed call
   * marks the group's ledger down for LEDGER_RETRY_MS. A lease that arrives
   * already dead (the ledger took longer than L to answer) is not a failure:
   * the waiting requests ask again, and are refused as contended when every
   * round comes back too late — a slow ledger must not turn a global limit
   * into a per-isolate one. L should exceed the ledger's round trip
   * (`global.min_lease_ms`).
   */
  flight(ns: LedgerNamespace, ctx: Background | null, group: LeaseGroup, shorts: readonly Short[]): Promise<void> {
    const nowMs = this.#now();
    const running = this.#flights.get(group);
    if (running !== undefined && nowMs - running.startedAtMs < MAX_FLIGHT_MS) return running.done;
    const ask = this.book.askFor(group, shorts, nowMs);
    const done: Promise<void> = askLedger(ns, ask)
      .then(
        (reply) => this.#answered(ask, reply),
        (err: unknown) => {
          log.warn("ledger_unavailable", { error: errorName(err) });
          this.book.failed(group, this.#now());
        },
      )
      .finally(() => {
        if (this.#flights.get(group)?.done === done) this.#flights.delete(group);
      });
    this.#flights.set(group, { done, startedAtMs: nowMs });
    keepAlive(ctx, done);
    return done;
  }

  #answered(ask: Ask, reply: AskReply): void {
    const nowMs = this.#now();
    this.book.answered(ask, reply, nowMs, holdMs);
    if (reply.status === "granted" && ask.items.some((item) => nowMs >= ask.askedAtMs + item.slot.leaseMs)) {
      log.warn("ledger_slow", { answered_after_ms: nowMs - ask.askedAtMs });
    }
  }

  /** Gives back, in the background, the unspent units of leases that died or were dropped, while that still credits something. */
  returnDue(ns: LedgerNamespace, ctx: Background | null, nowMs: number): void {
    this.book.sweep(nowMs);
    const returns = this.book.takeReturns();
    if (returns.length === 0) return;
    keepAlive(
      ctx,
      giveBackToLedger(ns, returns, Math.floor(nowMs)).catch((err: unknown) => log.warn("ledger_give_back_failed", { error: errorName(err) })),
    );
  }

  /**
   * A response-priced settlement of global limits, in the
   * background. If the ledger cannot take it and on_error is "local", it
   * lands on the isolate's own state of those limits (where the fallback
   * meters them); with "deny" it is logged and dropped.
   */
  settle(ns: LedgerNamespace, ctx: Background | null, table: LimiterTable, s: { subject: string; category: string; limits: readonly Limit[]; kind: "debt" | "refund"; units: number }, nowMs: number): void {
    if (s.limits.length === 0 || s.units === 0) return;
    keepAlive(
      ctx,
      settleOnLedger(ns, s.subject, s.category, s.limits, s.kind, s.units, Math.floor(nowMs)).catch((err: unknown) => {
        log.warn("ledger_settle_failed", { error: errorName(err), kind: s.kind });
        if (this.onError === "local") {
          const local = [{ subject: s.subject, category: s.category, limits: s.limits, units: s.units }];
          if (s.kind === "debt") chargeDebt(table, local, nowMs);
          else refund(table, local, nowMs);
        }
      }),
    );
  }

  /** Drops this isolate's leases and kept refusals of `subject` (its ledger state was reset). */
  forgetSubject(subject: string): void {
    this.book.forgetSubject(subject);
  }
}

// LimitLedger: one SQLite Durable Object per subject (`idFromName` of the
// subject string: `key:<sha256>`, `jwt:<hex>`, `tenant:<slug>`,
// `ip:<address or /64>`, `anonymous`), holding the authoritative GCRA state of
// that subject's global limits. Isolates lease units from it and
// spend them with no I/O; every move is the engine's exact arithmetic
// (src/engine/ledger-gcra.ts), decided and written inside one
// `transactionSync` with no await before it, so calls from any number of
// isolates are serialised here.
//
// The object never learns or stores its subject's name: an `ip:` subject is
// an address, and nothing here may log it.
//
// Cleanup: a state earned back is dead weight. The alarm deletes rows whose
// TAT and last charge passed more than CLEANUP_GRACE_MS ago (the grace
// absorbs isolates whose clocks run a little behind this object's; a lease
// given back after its row is gone is credited nothing, which is safe) and
// sets itself again only while rows remain; it is set about once per grace
// period, not per call.
//
// Accuracy (GET /global/accuracy): every call also counts, in its own
// transaction, what it granted, took back and refused per minute and limit,
// and the calls per minute (ledger-accuracy.ts); the alarm keeps those
// minutes ACCURACY_RETAIN_MS. A ledger with calls tells the directory (the
// ledger named DIRECTORY_NAME) its id and the label its callers gave it,
// every REGISTER_EVERY_MS, so the report knows which ledgers to read.
import { DurableObject } from "cloudflare:workers";
import { answerAsk, chargeDebtOn, EMPTY_STATE, type GcraState, giveBack, refundOn, standingAt } from "../engine/ledger-gcra";
import type { Limit } from "../engine/limit";
import { errorName, log } from "../log/logger";
import { ACCURACY_RETAIN_MS, type AccuracyRow, DIRECTORY_NAME, foldAccuracy, MINUTE_MS, minuteOf, REGISTER_EVERY_MS } from "./ledger-accuracy";
import { LEDGER_MIGRATIONS, LEDGER_SQL } from "./limit-ledger-sql";
import {
  accuracyInput,
  giveBackInput,
  type GrantInput,
  grantInput,
  type LedgerAccuracy,
  type LedgerAccuracyRequest,
  type LedgerFigures,
  type LedgerGiveBackRequest,
  type LedgerGrantRequest,
  type LedgerGrantResult,
  type LedgerListing,
  type LedgerRegistration,
  type LedgerSettleRequest,
  type LedgerStandingRequest,
  type LedgerStats,
  limitKeyOf,
  listingInput,
  registrationInput,
  settleInput,
  standingInput,
} from "./ledger-types";
import { migrate } from "./sql-migrations";

/** How long after a state is earned back (by this object's clock) its row may be deleted. */
export const CLEANUP_GRACE_MS = 60_000;

export class LimitLedger extends DurableObject<Env> {
  readonly #sql: SqlStorage;
  readonly #startedAtMs = Date.now();
  #calls = 0;
  /** When the cleanup alarm is set for (null: none); undefined until read from storage. */
  #alarmAtMs: number | null | undefined = undefined;
  /** The latest TAT this instance wrote. */
  #latestTatMs = 0;
  /** The newest minute with a call, and the second being counted for the peak (calls' clocks). */
  #minuteMs = -1;
  #secondMs = -1;
  #secondCalls = 0;
  /** What the callers call this ledger, when it last told the directory, and the calls since. */
  #label: string | null = null;
  #registeredAtMs = Number.NEGATIVE_INFINITY;
  #callsSinceRegistered = 0;
  /** The directory's own housekeeping: when it last deleted entries not seen lately. */
  #directoryPrunedAtMs = Number.NEGATIVE_INFINITY;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Synchronous, so it completes before the first call; a failure fails
    // construction and the edge takes `global.on_error`'s course.
    migrate(ctx.storage, LEDGER_MIGRATIONS);
    this.#sql = ctx.storage.sql;
  }

  /**
   * Gives back the units each item returns (credited whatever happens next),
   * then grants every item a lease, or none: the first item whose need does
   * not fit is refused with the exact delay after which it would.
   */
  grant(req: LedgerGrantRequest): Promise<LedgerGrantResult> {
    this.#calls++;
    // Checked before any promise, so a bad request throws at once.
    return this.#grant(grantInput(req));
  }

  async #grant(input: GrantInput): Promise<LedgerGrantResult> {
    const result = this.ctx.storage.transactionSync((): LedgerGrantResult => {
      const { category, nowMs, items } = input;
      const asks = items.map((item) => ({ ...item, ...this.#read(category, item.limit) }));
      const outcome = answerAsk(asks, nowMs);
      // Refused: only the give-backs change anything.
      items.forEach((item, k) => {
        if (outcome.granted || item.returning > 0) this.#write(category, item.limit, outcome.states[k]!, nowMs);
        const refused = !outcome.granted && outcome.index === k ? 1 : 0;
        this.#noteLimit(category, item.limit, nowMs, outcome.granted ? outcome.grants[k]!.units : 0, item.returning, 1, refused);
      });
      this.#noteCall(nowMs);
      if (!outcome.granted) return { status: "denied", index: outcome.index, retryAfterMs: outcome.retryAfterMs, ...outcome.standing };
      return { status: "granted", grants: outcome.grants.map((g) => ({ units: g.units, ...g.standing })) };
    });
    if (input.label !== null) this.#label = input.label;
    this.#registerWhenDue(input.nowMs);
    await this.#cleanupLater();
    return result;
  }

  /** Credits unspent units of dead or dropped leases (less what the rate earned back since each grant). Returns the credit per item, in each limit's units. */
  giveBack(req: LedgerGiveBackRequest): { creditedUnits: number[] } {
    this.#calls++;
    const { category, nowMs, returns } = giveBackInput(req);
    const creditedUnits = this.ctx.storage.transactionSync(() =>
      returns.map((r) => {
        const row = this.#read(category, r.limit);
        const back = giveBack(r.limit, row.state, r.units, r.grantedAtMs, nowMs, row.seenMs);
        if (back.creditedUnits > 0) this.#write(category, r.limit, back.state, nowMs);
        this.#noteLimit(category, r.limit, nowMs, 0, r.units, 0, 0);
        return back.creditedUnits;
      }),
    );
    this.#noteCall(nowMs);
    return { creditedUnits };
  }

  /** A response-priced settlement: a debt charged unconditionally, or a refund never before now. Returns each limit's figures after it. */
  settle(req: LedgerSettleRequest): Promise<LedgerFigures[]> {
    this.#calls++;
    return this.#settle(settleInput(req));
  }

  async #settle({ category, nowMs, kind, units, limits }: ReturnType<typeof settleInput>): Promise<LedgerFigures[]> {
    const figures = this.ctx.storage.transactionSync(() =>
      limits.map((limit) => {
        const before = this.#read(category, limit).state;
        const after = kind === "debt" ? chargeDebtOn(limit, before, units, nowMs) : refundOn(limit, before, units, nowMs);
        this.#write(category, limit, after, nowMs);
        // A debt is units admitted past the lease; a refund, units the lease charged and did not spend.
        this.#noteLimit(category, limit, nowMs, kind === "debt" ? units : 0, kind === "refund" ? units : 0, 0, 0);
        return standingAt(limit, after, nowMs);
      }),
    );
    this.#noteCall(nowMs);
    await this.#cleanupLater();
    return figures;
  }

  /** Each limit's figures at nowMs, charging nothing (explain). */
  standing(req: LedgerStandingRequest): LedgerFigures[] {
    this.#calls++;
    const { category, nowMs, limits } = standingInput(req);
    this.#noteCall(nowMs);
    return limits.map((limit) => standingAt(limit, this.#read(category, limit).state, nowMs));
  }

  /** Forgets every state of the subject (DELETE /callers/{caller_key}/state). Returns how many there were. */
  reset(): { states: number } {
    this.#calls++;
    const states = this.ctx.storage.transactionSync(() => {
      const n = this.#sql.exec<{ n: number }>(LEDGER_SQL.count).one().n;
      this.#sql.exec(LEDGER_SQL.removeAll);
      return n;
    });
    this.#latestTatMs = 0;
    return { states };
  }

  /**
   * What this ledger did in the minutes that start at or after `sinceMs`:
   * per (category, limit) units granted and given back, asks and refusals,
   * the busiest minute; the calls served and the most in one second. Reading
   * it is not counted as a call.
   */
  accuracy(req: LedgerAccuracyRequest): LedgerAccuracy {
    const { sinceMs } = accuracyInput(req);
    const from = minuteOf(sinceMs) === sinceMs ? sinceMs : minuteOf(sinceMs) + MINUTE_MS;
    const rows = this.#sql.exec<AccuracyRow & Record<string, SqlStorageValue>>(LEDGER_SQL.accuracySince, from).toArray();
    const calls = this.#sql.exec<{ calls: number; firstMinuteMs: number | null; peakPerS: number }>(LEDGER_SQL.callsSince, from).one();
    return { limits: foldAccuracy(rows), calls: calls.calls, firstCallMinuteMs: calls.firstMinuteMs, peakCallsPerS: calls.peakPerS };
  }

  /** The directory's side: a ledger says it had calls lately (see REGISTER_EVERY_MS). */
  register(req: LedgerRegistration): void {
    const { ledgerId, label, nowMs, calls } = registrationInput(req);
    this.#sql.exec(LEDGER_SQL.register, ledgerId, label, nowMs, calls);
    if (nowMs - this.#directoryPrunedAtMs >= MINUTE_MS) {
      this.#directoryPrunedAtMs = nowMs;
      this.#sql.exec(LEDGER_SQL.removeUnseen, nowMs - ACCURACY_RETAIN_MS);
    }
  }

  /** The directory's side: the ledgers seen since `sinceMs`, busiest first (calls in their last registration), at most `limit`. */
  ledgers(req: { sinceMs: number; limit: number }): LedgerListing {
    const { sinceMs, limit } = listingInput(req);
    const ledgers = this.#sql.exec<{ ledgerId: string; label: string; seenMs: number; calls: number }>(LEDGER_SQL.listLedgers, sinceMs, limit).toArray();
    return { ledgers, seen: this.#sql.exec<{ n: number }>(LEDGER_SQL.countLedgers, sinceMs).one().n };
  }

  /** Calls served by this instance and states held: for the benchmark and operators, never a subject. */
  stats(): LedgerStats {
    return { calls: this.#calls, startedAtMs: this.#startedAtMs, states: this.#sql.exec<{ n: number }>(LEDGER_SQL.count).one().n };
  }

  /** Deletes states earned back more than the grace ago; sets itself again only while states remain. Idempotent. */
  override async alarm(): Promise<void> {
    const nowMs = Date.now();
    const { latest, newest } = this.ctx.storage.transactionSync(() => {
      this.#sql.exec(LEDGER_SQL.removeEarnedBack, nowMs - CLEANUP_GRACE_MS);
      this.#removeOldMinutes(nowMs);
      return {
        latest: this.#sql.exec<{ latest: number | null }>(LEDGER_SQL.latest).one().latest,
        newest: this.#sql.exec<{ newest: number | null }>(LEDGER_SQL.newestMinute).one().newest,
      };
    });
    if (latest === null && newest === null) {
      this.#alarmAtMs = null;
      return;
    }
    // Again when the states left are due, or the last minutes kept for the accuracy report are.
    const at = Math.max(latest === null ? 0 : latest + CLEANUP_GRACE_MS, newest === null ? 0 : newest + MINUTE_MS + ACCURACY_RETAIN_MS, nowMs + 1000);
    await this.ctx.storage.setAlarm(at);
    this.#alarmAtMs = at;
  }

  #read(category: string, limit: Limit): { state: GcraState; seenMs: number } {
    const row = this.#sql.exec<{ tatCeilMs: number; deficitUnits: number; seenMs: number }>(LEDGER_SQL.state, category, limitKeyOf(limit)).toArray()[0];
    return row === undefined ? { state: EMPTY_STATE, seenMs: 0 } : { state: { tatCeilMs: row.tatCeilMs, deficitUnits: row.deficitUnits }, seenMs: row.seenMs };
  }

  // Kept also once earned back, with the latest time it was charged at (a
  // give-back's credit runs to it); the alarm deletes it after the grace.
  #write(category: string, limit: Limit, state: GcraState, nowMs: number): void {
    const seenMs = Math.floor(nowMs);
    this.#sql.exec(LEDGER_SQL.upsert, category, limitKeyOf(limit), state.tatCeilMs, state.deficitUnits, seenMs);
    const latest = Math.max(state.tatCeilMs, seenMs);
    if (latest > this.#latestTatMs) this.#latestTatMs = latest;
  }

  /** Counts one call in its minute (the calls' clocks), and the most in one second; a new minute deletes those past the retention. */
  #noteCall(nowMs: number): void {
    const t = Math.floor(nowMs);
    const minute = minuteOf(t);
    const second = t - (t % 1000);
    if (second !== this.#secondMs) {
      this.#secondMs = second;
      this.#secondCalls = 0;
    }
    this.#secondCalls++;
    this.#callsSinceRegistered++;
    this.#sql.exec(LEDGER_SQL.noteCall, minute, this.#secondCalls);
    if (minute > this.#minuteMs) {
      this.#minuteMs = minute;
      this.#removeOldMinutes(t);
    }
  }

  #noteLimit(category: string, limit: Limit, nowMs: number, grantedUnits: number, returnedUnits: number, asks: number, refusedAsks: number): void {
    this.#sql.exec(LEDGER_SQL.noteLimit, minuteOf(nowMs), category, limitKeyOf(limit), grantedUnits, returnedUnits, asks, refusedAsks);
  }

  #removeOldMinutes(nowMs: number): void {
    this.#sql.exec(LEDGER_SQL.removeOldMinutes, nowMs - ACCURACY_RETAIN_MS);
    this.#sql.exec(LEDGER_SQL.removeOldCallMinutes, nowMs - ACCURACY_RETAIN_MS);
  }

  // Tells the directory this ledger had calls, at most every REGISTER_EVERY_MS,
  // in the background: a failure is logged and tried again at the next grant.
  #registerWhenDue(nowMs: number): void {
    const label = this.#label;
    if (label === null || nowMs - this.#registeredAtMs < REGISTER_EVERY_MS) return;
    this.#registeredAtMs = nowMs;
    const calls = this.#callsSinceRegistered;
    this.#callsSinceRegistered = 0;
    const ns = this.env.LIMIT_LEDGER;
    const registration: LedgerRegistration = { ledgerId: this.ctx.id.toString(), label, nowMs: Math.floor(nowMs), calls };
    this.ctx.waitUntil(
      ns
        .get(ns.idFromName(DIRECTORY_NAME))
        .register(registration)
        .catch((err: unknown) => {
          log.warn("ledger_register_failed", { error: errorName(err) });
          this.#registeredAtMs = Number.NEGATIVE_INFINITY;
          this.#callsSinceRegistered += calls;
        }),
    );
  }

  // Keeps the cleanup alarm at or after the latest TAT written plus the
  // grace, moving it only when it falls short (then a grace further out), so
  // a busy subject sets it about once per grace period.
  async #cleanupLater(): Promise<void> {
    const due = this.#latestTatMs + CLEANUP_GRACE_MS;
    if (this.#latestTatMs === 0 || (this.#alarmAtMs != null && this.#alarmAtMs >= due)) return;
    if (this.#alarmAtMs === undefined) {
      this.#alarmAtMs = await this.ctx.storage.getAlarm();
      if (this.#alarmAtMs !== null && this.#alarmAtMs >= due) return;
    }
    const at = due + CLEANUP_GRACE_MS;
    await this.ctx.storage.setAlarm(at);
    this.#alarmAtMs = at;
  }
}

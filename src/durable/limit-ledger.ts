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
import { DurableObject } from "cloudflare:workers";
import { answerAsk, chargeDebtOn, EMPTY_STATE, type GcraState, giveBack, refundOn, standingAt } from "../engine/ledger-gcra";
import type { Limit } from "../engine/limit";
import { LEDGER_MIGRATIONS, LEDGER_SQL } from "./limit-ledger-sql";
import {
  giveBackInput,
  type GrantInput,
  grantInput,
  type LedgerFigures,
  type LedgerGiveBackRequest,
  type LedgerGrantRequest,
  type LedgerGrantResult,
  type LedgerSettleRequest,
  type LedgerStandingRequest,
  type LedgerStats,
  limitKeyOf,
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
      });
      if (!outcome.granted) return { status: "denied", index: outcome.index, retryAfterMs: outcome.retryAfterMs, ...outcome.standing };
      return { status: "granted", grants: outcome.grants.map((g) => ({ units: g.units, ...g.standing })) };
    });
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
        return back.creditedUnits;
      }),
    );
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
        return standingAt(limit, after, nowMs);
      }),
    );
    await this.#cleanupLater();
    return figures;
  }

  /** Each limit's figures at nowMs, charging nothing (explain). */
  standing(req: LedgerStandingRequest): LedgerFigures[] {
    this.#calls++;
    const { category, nowMs, limits } = standingInput(req);
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

  /** Calls served by this instance and states held: for the benchmark and operators, never a subject. */
  stats(): LedgerStats {
    return { calls: this.#calls, startedAtMs: this.#startedAtMs, states: this.#sql.exec<{ n: number }>(LEDGER_SQL.count).one().n };
  }

  /** Deletes states earned back more than the grace ago; sets itself again only while states remain. Idempotent. */
  override async alarm(): Promise<void> {
    const nowMs = Date.now();
    const latest = this.ctx.storage.transactionSync(() => {
      this.#sql.exec(LEDGER_SQL.removeEarnedBack, nowMs - CLEANUP_GRACE_MS);
      return this.#sql.exec<{ latest: number | null }>(LEDGER_SQL.latest).one().latest;
    });
    if (latest === null) {
      this.#alarmAtMs = null;
      return;
    }
    const at = Math.max(latest + CLEANUP_GRACE_MS, nowMs + 1000);
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

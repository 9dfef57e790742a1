// Budgets held in a quota Durable Object (TenantQuota for tenant and key
// budgets, OrgQuota for org budgets): the definitions and the exact state of
// each one's current period. Both objects hold one BudgetStore and expose its
// methods as RPC; every decision reads and writes inside one
// `transactionSync` with no await before it, so concurrent reserves from any
// number of isolates are serialised by the object and never admit more than
// `amount` in a period.
//
// A reserve adds its units to `used` at once (all or nothing across the
// spends it names); a settlement replaces a reserve by the actual units
// (refund below it, debt above it, `used` never below 0). A reserve nobody
// settles stands. A period rolls over lazily: the first call whose `nowMs`
// is past the reset starts the new period at 0 (thresholds re-armed).
import { crossedMask, currentPeriodStartMs, isBudgetPeriod, periodEndMs, type BudgetPeriod } from "../engine/budget-period";
import { BUDGET_LEASE_SQL, BUDGET_SQL } from "./budget-sql";
import {
  type BudgetPutRequest,
  type BudgetPutResult,
  type BudgetReserveRequest,
  type BudgetReserveResult,
  type BudgetSettleRequest,
  type BudgetSettleResult,
  type BudgetSpend,
  type BudgetState,
  type BudgetThresholdAudit,
  type BudgetTopUpRequest,
  type BudgetTopUpResult,
  DEFAULT_BUDGET_THRESHOLDS,
  MAX_BUDGET_AMOUNT,
} from "./budget-types";

/** How long a reservation is remembered for its settlement (and a replay of it). */
export const BUDGET_RESERVATION_RETENTION_MS = 24 * 60 * 60 * 1000;
/** How long a top-up's Idempotency-Key is remembered: a repeat within it adds nothing. */
export const BUDGET_TOPUP_KEY_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Spends one reserve may name (a request spends a handful of categories, each at up to three owners). */
const MAX_SPENDS = 64;
const MAX_NAME_CHARS = 200;

type Row = { owner: string; category: string; amount: number; period: string; thresholds: string; period_start: number; used: number; fired: number; shadow: number };

/** A budget row rolled to the period holding nowMs (not yet written). */
/** What the lease RPCs (budget-lease-store.ts) read and write of this store's rows, inside its transactions. */
export interface BudgetRows {
  readonly sql: SqlStorage;
  transaction<T>(fn: () => T): T;
  /** The budget rolled to the period holding nowMs, or null when there is none. */
  live(owner: string, category: string, nowMs: number): LiveBudget | null;
  /** Writes its state, adding the audits of thresholds crossed for the first time this period. */
  write(live: LiveBudget, audits: BudgetThresholdAudit[]): void;
  state(live: LiveBudget): BudgetState;
}

export type LiveBudget = Live;

interface Live {
  owner: string;
  category: string;
  amount: number;
  period: BudgetPeriod;
  thresholds: number[];
  start: number;
  used: number;
  fired: number;
  rolled: boolean;
  /** A shadow budget: a spend it cannot take is not refused, and not charged to it. */
  shadow: boolean;
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new TypeError(`budget: ${message}`);
}

export function checkBudgetName(value: unknown, what: string): asserts value is string {
  checkName(value, what);
}

export function checkBudgetUnits(value: unknown, what: string): asserts value is number {
  checkUnits(value, what);
}

export function checkBudgetTime(value: unknown): asserts value is number {
  checkTime(value);
}

function checkName(value: unknown, what: string): asserts value is string {
  check(typeof value === "string" && value.length > 0 && value.length <= MAX_NAME_CHARS, `${what} must be a non-empty string`);
}

function checkUnits(value: unknown, what: string): asserts value is number {
  check(typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= MAX_BUDGET_AMOUNT, `${what} must be a whole number in 0..2^53`);
}

function checkTime(value: unknown): asserts value is number {
  check(typeof value === "number" && Number.isFinite(value) && value >= 0, "nowMs must be a time");
}

function checkThresholds(value: unknown): number[] {
  if (value === undefined) return [...DEFAULT_BUDGET_THRESHOLDS];
  check(Array.isArray(value) && value.length <= 8, "thresholds must be a list of at most 8");
  const list = value as unknown[];
  for (const t of list) check(typeof t === "number" && t > 0 && t <= 1, "thresholds must be fractions in (0, 1]");
  return [...new Set(list as number[])].sort((a, b) => a - b);
}

export class BudgetStore {
  readonly #storage: DurableObjectStorage;
  readonly #sql: SqlStorage;

  /** The rows, for the lease RPCs (budget-lease-store.ts), which share this store's tables and transactions. */
  readonly rows: BudgetRows;

  constructor(storage: DurableObjectStorage) {
    this.#storage = storage;
    this.#sql = storage.sql;
    this.rows = {
      sql: storage.sql,
      transaction: (fn) => storage.transactionSync(fn),
      live: (owner, category, nowMs) => this.#live(owner, category, nowMs),
      write: (live, audits) => this.#write(live, audits),
      state: stateOf,
    };
  }

  /** Reserves every spend that has a budget here, all or nothing. */
  reserve(req: BudgetReserveRequest): BudgetReserveResult {
    checkName(req.reservationId, "reservationId");
    checkTime(req.nowMs);
    check(Array.isArray(req.spends) && req.spends.length <= MAX_SPENDS, `spends must be a list of at most ${MAX_SPENDS}`);
    const spends = mergeSpends(req.spends);
    const nowMs = req.nowMs;
    const force = req.force === true;
    return this.#storage.transactionSync((): BudgetReserveResult => {
      const held = this.#sql.exec<{ owner: string; category: string }>(BUDGET_SQL.reservationsOf, req.reservationId).toArray();
      if (held.length > 0) {
        // A retried reserve whose first answer was lost: it stands as recorded.
        const budgets = held.map((h) => this.#live(h.owner, h.category, nowMs)).filter((l): l is Live => l !== null);
        return { status: "reserved", budgets: budgets.map((l) => stateOf(l)), exhausted: null, audits: [] };
      }
      this.#sql.exec(BUDGET_SQL.pruneReservations, nowMs - BUDGET_RESERVATION_RETENTION_MS);
      const charged: { live: Live; units: number }[] = [];
      const shadowsPast: Live[] = [];
      let exhausted: Live | null = null;
      for (const s of spends) {
        const live = this.#live(s.owner, s.category, nowMs);
        if (live === null) continue;
        // A spend of 0 (a response-priced reserve of 0: its cost settles as debt) fits only while something is left.
        const fits = s.units > 0 ? live.used + s.units <= live.amount : live.used < live.amount;
        // A shadow budget refuses nothing, and (unless forced) is not charged what it cannot take.
        if (live.shadow && !fits && !force) continue;
        // Forced (shadow mode): charged like the others, as it would be if it were enforced, and named.
        if (live.shadow && !fits) shadowsPast.push(live);
        if (exhausted === null && !fits && !live.shadow) exhausted = live;
        charged.push({ live, units: s.units });
      }
      if (exhausted !== null && !force) return { status: "exhausted", budget: stateOf(exhausted) };
      const exhaustedState = exhausted === null ? null : stateOf(exhausted);
      const audits: BudgetThresholdAudit[] = [];
      for (const { live, units } of charged) {
        live.used = Math.min(live.used + units, MAX_BUDGET_AMOUNT);
        this.#write(live, audits);
        this.#sql.exec(BUDGET_SQL.insertReservation, req.reservationId, live.owner, live.category, units, live.start, nowMs);
      }
      return { status: "reserved", budgets: charged.map((c) => stateOf(c.live)), exhausted: exhaustedState, audits, ...(shadowsPast.length > 0 ? { shadows: shadowsPast.map(stateOf) } : {}) };
    });
  }

  /**
   * Replaces a reservation's units by the actual ones: refund below the
   * reserve, debt above it. Settled, the reservation is deleted (a busy
   * tenant's object would otherwise hold a row per request for a day): a
   * replay of the settlement finds nothing and moves nothing.
   */
  settle(req: BudgetSettleRequest): BudgetSettleResult {
    checkName(req.reservationId, "reservationId");
    checkTime(req.nowMs);
    check(Array.isArray(req.actual), "actual must be a list");
    const actual = new Map<string, number>();
    for (const a of req.actual) {
      checkName(a.category, "category");
      checkUnits(a.units, "units");
      actual.set(a.category, a.units);
    }
    return this.#storage.transactionSync((): BudgetSettleResult => {
      const rows = this.#sql.exec<{ owner: string; category: string; units: number; period_start: number }>(BUDGET_SQL.unsettledOf, req.reservationId).toArray();
      // Rows an older version kept after settling them go too.
      this.#sql.exec(BUDGET_SQL.deleteReservation, req.reservationId);
      if (rows.length === 0) return { status: "unknown", debt: 0, refunded: 0, audits: [] };
      let debt = 0;
      let refunded = 0;
      const audits: BudgetThresholdAudit[] = [];
      for (const r of rows) {
        const units = actual.get(r.category) ?? r.units;
        if (units === r.units) continue;
        const live = this.#live(r.owner, r.category, req.nowMs);
        if (live === null) continue;
        if (units > r.units) {
          // A debt counts in the period it becomes known in (the spend is real).
          const more = units - r.units;
          live.used = Math.min(live.used + more, MAX_BUDGET_AMOUNT);
          debt += more;
        } else if (live.start === r.period_start) {
          // A refund gives back only to the period the reserve was taken from.
          const back = Math.min(r.units - units, live.used);
          live.used -= back;
          refunded += back;
        }
        this.#write(live, audits);
      }
      return { status: "settled", debt, refunded, audits };
    });
  }

  /** Creates or replaces a budget. The current period's `used` stays when the period kind stays; a new kind starts at 0. */
  put(req: BudgetPutRequest): BudgetPutResult {
    checkName(req.owner, "owner");
    checkName(req.category, "category");
    checkUnits(req.amount, "amount");
    check(isBudgetPeriod(req.period), "period must be day, week, month or none");
    checkTime(req.nowMs);
    const thresholds = checkThresholds(req.thresholds);
    return this.#storage.transactionSync((): BudgetPutResult => {
      const before = this.#live(req.owner, req.category, req.nowMs);
      const samePeriod = before !== null && before.period === req.period;
      const live: Live = {
        owner: req.owner,
        category: req.category,
        amount: req.amount,
        period: req.period,
        thresholds,
        start: samePeriod ? before.start : currentPeriodStartMs(req.period, 0, req.nowMs),
        used: samePeriod ? before.used : 0,
        fired: 0,
        rolled: false,
        shadow: req.shadow === true,
      };
      // Thresholds already passed are not announced again for this period.
      live.fired = crossedMask(thresholds, live.used, live.amount);
      this.#sql.exec(BUDGET_SQL.upsert, live.owner, live.category, live.amount, live.period, JSON.stringify(thresholds), live.start, live.used, live.fired, req.nowMs, req.nowMs, live.shadow ? 1 : 0);
      return { created: before === null, budget: stateOf(live), previous: before === null ? null : stateOf(before) };
    });
  }

  /**
   * Adds to a credits budget's amount (`period: none`); a periodic budget is
   * refused. With an idempotency key, the top-up and the record of its answer
   * are one transaction: the same key again (for this owner, within
   * BUDGET_TOPUP_KEY_RETENTION_MS) adds nothing and answers what the first
   * did, so a retried top-up whose answer was lost is never added twice.
   */
  topUp(req: BudgetTopUpRequest): BudgetTopUpResult {
    checkName(req.owner, "owner");
    checkName(req.category, "category");
    checkUnits(req.amount, "amount");
    checkTime(req.nowMs);
    const key = req.idempotencyKey;
    if (key !== undefined) checkName(key, "idempotencyKey");
    return this.#storage.transactionSync((): BudgetTopUpResult => {
      if (key !== undefined) {
        this.#sql.exec(BUDGET_SQL.pruneTopUps, req.nowMs - BUDGET_TOPUP_KEY_RETENTION_MS);
        const first = this.#sql.exec<{ category: string; amount: number; answer: string }>(BUDGET_SQL.topUpOf, req.owner, key).toArray()[0];
        if (first !== undefined) {
          if (first.category !== req.category || first.amount !== req.amount) return { status: "key_reused" };
          return { status: "topped_up", budget: JSON.parse(first.answer) as BudgetState, replayed: true };
        }
      }
      const live = this.#live(req.owner, req.category, req.nowMs);
      if (live === null) return { status: "not_found" };
      if (live.period !== "none") return { status: "periodic", budget: stateOf(live) };
      const added = Math.min(req.amount, MAX_BUDGET_AMOUNT - live.amount);
      live.amount += added;
      this.#sql.exec(BUDGET_SQL.addAmount, added, req.nowMs, live.owner, live.category);
      const budget = stateOf(live);
      if (key !== undefined) this.#sql.exec(BUDGET_SQL.insertTopUp, req.owner, key, req.category, req.amount, JSON.stringify(budget), req.nowMs);
      return { status: "topped_up", budget, replayed: false };
    });
  }

  /** Every budget of `owner` (every budget here when null), rolled to `nowMs`. */
  list(owner: string | null, nowMs: number): BudgetState[] {
    checkTime(nowMs);
    const rows = owner === null ? this.#sql.exec<Row>(BUDGET_SQL.allBudgets).toArray() : this.#sql.exec<Row>(BUDGET_SQL.budgetsOf, owner).toArray();
    // With the units isolates hold in leases: counted in `used`, not yet reported spent.
    return rows.map((r) => ({ ...stateOf(liveOf(r, nowMs)), leased: this.#sql.exec<{ units: number }>(BUDGET_LEASE_SQL.leasedOf, r.owner, r.category, nowMs).one().units }));
  }

  /**
   * Deletes one budget and its reservations; true when there was one. A
   * budget put again under the same name is a new one: a request reserved
   * under the old one settles against nothing (its refund would otherwise
   * come out of the new budget's spend, its debt go into it).
   */
  delete(owner: string, category: string): boolean {
    checkName(owner, "owner");
    checkName(category, "category");
    return this.#storage.transactionSync(() => {
      this.#sql.exec(BUDGET_SQL.deleteReservationsOfBudget, owner, category);
      // Its leases too: a lease closed later gives nothing back to a new budget of the same name.
      this.#sql.exec(BUDGET_LEASE_SQL.deleteOfBudget, owner, category);
      return this.#sql.exec(BUDGET_SQL.deleteBudget, owner, category).rowsWritten > 0;
    });
  }

  /** Deletes every budget of `owner` (a deleted key), or every budget here when null (a deleted tenant or org). Returns how many. */
  purge(owner: string | null): number {
    return this.#storage.transactionSync(() => {
      if (owner === null) {
        this.#sql.exec(BUDGET_LEASE_SQL.deleteAll);
        this.#sql.exec(BUDGET_SQL.deleteAllReservations);
        this.#sql.exec(BUDGET_SQL.deleteAllTopUps);
        return this.#sql.exec(BUDGET_SQL.deleteAll).rowsWritten;
      }
      this.#sql.exec(BUDGET_LEASE_SQL.deleteOfOwner, owner);
      this.#sql.exec(BUDGET_SQL.deleteReservationsOfOwner, owner);
      this.#sql.exec(BUDGET_SQL.deleteTopUpsOfOwner, owner);
      return this.#sql.exec(BUDGET_SQL.deleteOwner, owner).rowsWritten;
    });
  }

  #live(owner: string, category: string, nowMs: number): Live | null {
    const row = this.#sql.exec<Row>(BUDGET_SQL.budget, owner, category).toArray()[0];
    return row === undefined ? null : liveOf(row, nowMs);
  }

  /** Writes a budget's state, with the audit of each threshold crossed for the first time this period. */
  #write(live: Live, audits: BudgetThresholdAudit[]): void {
    const crossed = crossedMask(live.thresholds, live.used, live.amount);
    const fresh = crossed & ~live.fired;
    if (fresh !== 0) {
      for (let i = 0; i < live.thresholds.length; i++) {
        if ((fresh & (1 << i)) === 0) continue;
        audits.push({
          owner: live.owner,
          category: live.category,
          period: live.period,
          threshold: live.thresholds[i]!,
          amount: live.amount,
          used: live.used,
          periodStartMs: live.period === "none" ? null : live.start,
          ...(live.shadow ? { shadow: true as const } : {}),
        });
      }
      live.fired |= fresh;
    }
    this.#sql.exec(BUDGET_SQL.setState, live.start, live.used, live.fired, live.owner, live.category);
  }
}

function liveOf(row: Row, nowMs: number): Live {
  const period = isBudgetPeriod(row.period) ? row.period : "none";
  const start = currentPeriodStartMs(period, row.period_start, nowMs);
  const rolled = start !== row.period_start;
  let thresholds: number[];
  try {
    thresholds = checkThresholds(JSON.parse(row.thresholds));
  } catch {
    thresholds = [...DEFAULT_BUDGET_THRESHOLDS];
  }
  return { owner: row.owner, category: row.category, amount: row.amount, period, thresholds, start, used: rolled ? 0 : row.used, fired: rolled ? 0 : row.fired, rolled, shadow: row.shadow === 1 };
}

function stateOf(l: Live): BudgetState {
  return {
    owner: l.owner,
    category: l.category,
    period: l.period,
    amount: l.amount,
    used: l.used,
    remaining: Math.max(0, l.amount - l.used),
    thresholds: [...l.thresholds],
    periodStartMs: l.period === "none" ? null : l.start,
    resetsAtMs: periodEndMs(l.period, l.start),
    ...(l.shadow ? { shadow: true as const } : {}),
  };
}

/** The spends checked, the same owner and category summed. */
function mergeSpends(spends: readonly BudgetSpend[]): BudgetSpend[] {
  const out = new Map<string, BudgetSpend>();
  for (const s of spends) {
    checkName(s.owner, "owner");
    checkName(s.category, "category");
    checkUnits(s.units, "units");
    const key = `${s.owner}\n${s.category}`;
    const seen = out.get(key);
    if (seen === undefined) out.set(key, { owner: s.owner, category: s.category, units: s.units });
    else seen.units = Math.min(seen.units + s.units, MAX_BUDGET_AMOUNT);
  }
  return [...out.values()];
}

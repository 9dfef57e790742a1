// Per-tenant monthly metering: `requests`
// (admitted requests), `bytes_in` (request body bytes forwarded),
// `bytes_stored` (the quota object's signed delta: + on commit, − on remove)
// and `stream_seconds` (WebSocket streams held open),
// per tenant and UTC calendar month. Each isolate sums deltas in memory and
// writes them in the background (waitUntil) at most once per
// usage.flush_interval_s while it is busy, and at once when a request ends
// with no other in flight (flushIdle: no later request may come to carry
// them), as upserts that ADD to usage_monthly.value, so two isolates
// flushing at once never overwrite each other.
//
// It never blocks or fails a request: `add` is a Map update and `maybeFlush`
// only hands a promise to waitUntil; a flush's error is logged (by name: a D1
// error can carry SQL) and its deltas are merged back for the next flush. It
// holds at most `maxPending` distinct (tenant, month, metric) entries; past
// that a new entry's delta is dropped and counted (an entry already pending
// still adds).
//
// Other background writes can ride with it (`MeterRider`): the keys' use
// (src/identity/usage-tracker.ts) is written whenever metering is, so the two
// never tell different stories about the same requests.
import { sql } from "drizzle-orm";
import type { Db } from "./client";
import { usageMonthly } from "./schema";
import { periodOf } from "./usage-monthly";
import { errorName, log } from "../log/logger";

/**
 * `stream_seconds`: how long the tenant's WebSocket streams stayed open, whole seconds, each stream rounded up.
 * `units:<category>`: what response-priced routes cost, in the category's units.
 */
export type MeterMetric = "requests" | "bytes_in" | "bytes_stored" | "stream_seconds" | `units:${string}` | `budget:${string}`;

interface Pending {
  readonly tenant: string;
  /** `YYYY-MM`, UTC. */
  readonly period: string;
  readonly metric: MeterMetric;
  /** The summed delta; bytes_stored may be negative. */
  value: number;
  /** How many `add` calls the value sums: what is lost (and counted) if the entry is dropped. */
  adds: number;
}

/**
 * Rows per INSERT: D1 binds at most 100 parameters per statement and a row
 * binds 4. The statements of one flush go in one batch (one transaction).
 */
const ROWS_PER_STATEMENT = 25;

/** The largest distance from the epoch, in ms, a Date can hold; past it `new Date(ms).toISOString()` throws. */
const MAX_DATE_MS = 8.64e15;

export interface UsageMeterStats {
  /** Distinct (tenant, month, metric) entries waiting for the next flush. */
  readonly pending: number;
  /** `add` calls whose delta was lost: refused when full, or not put back after a failed flush. */
  readonly dropped: number;
  readonly flushes: number;
  readonly failedFlushes: number;
}

/**
 * Writes that go to D1 whenever metering does (the keys' use): told to flush
 * each time the meter starts a flush, and counted as pending so a meter with
 * nothing of its own still flushes for it.
 */
export interface MeterRider {
  readonly hasPending: boolean;
  /** Writes what is pending; never rejects (a failure is the rider's to keep for next time). */
  flush(db: () => Db): Promise<void>;
}

/** The shortest wall-clock gap between two writes of a quiet isolate's metering (see flushIdle). */
export const IDLE_FLUSH_GAP_MS = 1000;
/** Up to this many request ends in a second, an isolate counts as quiet (see endedQuietly). */
export const QUIET_REQUESTS_PER_S = 10;

/**
 * Pending entries by period, then tenant, then metric: an add finds its
 * entry with lookups of strings it already holds (the meter's period, the
 * tenant's slug, a metric name) rather than building and hashing a
 * `tenant \n period \n metric` key on every request.
 */
class PendingTable {
  readonly #byPeriod = new Map<string, Map<string, Map<string, Pending>>>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(tenant: string, period: string, metric: string): Pending | undefined {
    return this.#byPeriod.get(period)?.get(tenant)?.get(metric);
  }

  /** Adds an entry no other holds the place of (get gave undefined). */
  add(entry: Pending): void {
    let byTenant = this.#byPeriod.get(entry.period);
    if (byTenant === undefined) this.#byPeriod.set(entry.period, (byTenant = new Map()));
    let byMetric = byTenant.get(entry.tenant);
    if (byMetric === undefined) byTenant.set(entry.tenant, (byMetric = new Map()));
    byMetric.set(entry.metric, entry);
    this.#size += 1;
  }

  values(): Pending[] {
    const out: Pending[] = [];
    for (const byTenant of this.#byPeriod.values()) for (const byMetric of byTenant.values()) for (const entry of byMetric.values()) out.push(entry);
    return out;
  }
}

export class UsageMeter {
  readonly #rider: MeterRider | null;
  #pending = new PendingTable();
  #dropped = 0;
  #flushes = 0;
  #failedFlushes = 0;
  /** The bound the last `add` was given: a failed flush puts entries back within it. */
  #maxPending = 0;
  /** The flush being written, if any: one at a time per meter. */
  #inFlight: Promise<void> | null = null;
  /** The second (of the gateway's clock) whose request ends are being counted, and how many. */
  #endsSecond = 0;
  #endsInSecond = 0;
  #endsInPreviousSecond = 0;
  /** When the last idle write began (wall clock, ms), and whether the next one is scheduled. */
  #lastIdleFlushAtMs = 0;
  #idleScheduled = false;
  /**
   * The interval is counted from here: the first `add` into an empty meter,
   * then the start of each flush. Null while nothing is pending and no flush
   * has set it, so an idle isolate does not flush the moment it wakes.
   */
  #intervalFromMs: number | null = null;
  /** The UTC month `YYYY-MM` valid in [#periodFromMs, #periodUntilMs): saves a Date per add. */
  #period = "";
  #periodFromMs = 0;
  #periodUntilMs = 0;

  /** `rider`: written with every flush of this meter (the isolate's key usage). */
  constructor(rider: MeterRider | null = null) {
    this.#rider = rider;
  }

  get stats(): UsageMeterStats {
    return { pending: this.#pending.size, dropped: this.#dropped, flushes: this.#flushes, failedFlushes: this.#failedFlushes };
  }

  /** `add` calls whose delta was lost because the meter was full (see UsageMeterStats.dropped). */
  droppedCount(): number {
    return this.#dropped;
  }

  /**
   * Adds `delta` to `tenant`'s `metric` for the UTC month of `nowMs`. A delta
   * that is not a safe integer (NaN, Infinity, a fraction), or a `nowMs` that
   * is no time, is ignored: the column is an integer and a caller bug must
   * not poison a tenant's bill. A delta of 0 changes nothing. Never throws.
   */
  add(tenant: string, metric: MeterMetric, delta: number, nowMs: number, maxPending: number): void {
    this.#maxPending = maxPending;
    if (delta === 0 || !Number.isSafeInteger(delta) || !(Math.abs(nowMs) <= MAX_DATE_MS)) return;
    const period = this.#periodOf(nowMs);
    const entry = this.#pending.get(tenant, period, metric);
    if (entry !== undefined) {
      entry.value += delta;
      entry.adds += 1;
    } else if (this.#pending.size < maxPending) {
      this.#pending.add({ tenant, period, metric, value: delta, adds: 1 });
    } else {
      this.#dropped += 1;
      return;
    }
    this.#intervalFromMs ??= nowMs;
  }

  #periodOf(atMs: number): string {
    if (!(atMs >= this.#periodFromMs && atMs < this.#periodUntilMs)) {
      const at = new Date(atMs);
      this.#period = periodOf(atMs);
      this.#periodFromMs = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1);
      this.#periodUntilMs = Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1);
    }
    return this.#period;
  }

  /** Whether maybeFlush could start a flush at `nowMs` (a cheap check, so a request that has none to start allocates nothing). */
  flushDue(nowMs: number, flushIntervalMs: number): boolean {
    return this.#inFlight === null && this.#intervalFromMs !== null && nowMs - this.#intervalFromMs >= flushIntervalMs;
  }

  /**
   * Starts a flush when one is due — something pending, `flushIntervalMs`
   * passed since the first add into an empty meter or since the last flush
   * began, and no flush running — and hands its promise to `waitUntil`. The
   * interval is per isolate (per meter), not per entry: one batch carries
   * everything. Returns whether it started one. `db` is called only then.
   * Never throws; the promise never rejects.
   */
  maybeFlush(db: () => Db, nowMs: number, flushIntervalMs: number, waitUntil: (p: Promise<unknown>) => void): boolean {
    if (this.#inFlight !== null || this.#intervalFromMs === null || nowMs - this.#intervalFromMs < flushIntervalMs) return false;
    if (!this.hasPending) {
      this.#intervalFromMs = null;
      return false;
    }
    const work = this.#flush(db, nowMs);
    try {
      waitUntil(work);
    } catch {
      // No execution context (the app called without one): the write still runs.
    }
    return true;
  }

  /** Whether anything waits for a flush, the rider's included. */
  get hasPending(): boolean {
    return this.#pending.size > 0 || this.#rider?.hasPending === true;
  }

  /**
   * Counts one request's end and says whether the isolate is quiet: at most
   * QUIET_REQUESTS_PER_S requests ended in the second of `nowMs` and in the
   * one before it. Under
   * load, requests keep arriving and the interval's flush carries metering;
   * only a quiet isolate writes as a request ends (flushIdle), so steady
   * traffic never costs more than the interval's write.
   */
  endedQuietly(nowMs: number): boolean {
    const second = Math.floor(nowMs / 1000);
    if (second !== this.#endsSecond) {
      // The second before counts too, so a busy isolate is not "quiet" for the first requests of each new second.
      this.#endsInPreviousSecond = second === this.#endsSecond + 1 ? this.#endsInSecond : 0;
      this.#endsSecond = second;
      this.#endsInSecond = 0;
    }
    this.#endsInSecond += 1;
    return this.#endsInSecond <= QUIET_REQUESTS_PER_S && this.#endsInPreviousSecond <= QUIET_REQUESTS_PER_S;
  }

  /**
   * Writes what is pending soon, whatever the interval, for an isolate with
   * no other request in flight, which may see no other request for a long
   * time (a quiet gateway), so nothing metered waits for one. At most one
   * such write a second (`IDLE_FLUSH_GAP_MS`, wall-clock): a client sending
   * one request at a time must not cost a D1 write per request. Within the
   * second after one, the first request to ask schedules the next write for
   * the second's end (a timer under waitUntil, well inside the 30 s the
   * runtime gives background work); later ones join it. Never throws; the
   * promise never rejects.
   */
  flushIdle(db: () => Db, nowMs: number, waitUntil: (p: Promise<unknown>) => void): void {
    if (!this.hasPending || this.#idleScheduled) return;
    const sinceMs = Date.now() - this.#lastIdleFlushAtMs;
    const waitMs = sinceMs >= IDLE_FLUSH_GAP_MS ? 0 : IDLE_FLUSH_GAP_MS - sinceMs;
    this.#idleScheduled = true;
    const work = (async () => {
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
      // A flush already running takes what was pending when it began: the rest is written after it.
      while (this.#inFlight !== null) await this.#inFlight;
      this.#idleScheduled = false;
      this.#lastIdleFlushAtMs = Date.now();
      if (this.hasPending) await this.#flush(db, nowMs + waitMs);
    })();
    try {
      waitUntil(work);
    } catch {
      // No execution context: the write still runs.
    }
  }

  /**
   * Writes everything pending now, whatever the interval (tests, shutdown),
   * after any flush already running. Resolves when written or put back;
   * never rejects.
   */
  async flushNow(db: Db, nowMs: number): Promise<void> {
    while (this.#inFlight !== null) await this.#inFlight;
    if (!this.hasPending) return;
    await this.#flush(() => db, nowMs);
  }

  /** Swaps the pending map out synchronously, so adds during the write go to a fresh one. */
  #flush(db: () => Db, nowMs: number): Promise<void> {
    const entries = this.#pending.values();
    this.#pending = new PendingTable();
    this.#intervalFromMs = nowMs;
    // Neither write rejects: each puts back what it could not write.
    const work = Promise.all([this.#write(db, entries), this.#rider?.flush(db)])
      .then(() => undefined)
      .finally(() => {
        this.#inFlight = null;
      });
    this.#inFlight = work;
    return work;
  }

  async #write(db: () => Db, entries: readonly Pending[]): Promise<void> {
    // Entries that net to zero (a commit and a remove of the same bytes) need no write.
    const rows = entries.filter((e) => e.value !== 0).map(({ tenant, period, metric, value }) => ({ tenant, period, metric, value }));
    try {
      if (rows.length > 0) {
        const handle = db();
        const statements = [];
        for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
          statements.push(
            handle
              .insert(usageMonthly)
              .values(rows.slice(i, i + ROWS_PER_STATEMENT))
              .onConflictDoUpdate({
                target: [usageMonthly.tenant, usageMonthly.period, usageMonthly.metric],
                set: { value: sql`${usageMonthly.value} + excluded.value` },
              }),
          );
        }
        const [first, ...rest] = statements;
        // One batch is one transaction: it lands whole or not at all, so putting every entry back on a failure never counts twice.
        if (first !== undefined) await handle.batch([first, ...rest]);
      }
      this.#flushes += 1;
    } catch (error) {
      this.#failedFlushes += 1;
      this.#mergeBack(entries);
      log.warn("usage_meter_flush_failed", { error: errorName(error) });
    }
  }

  /**
   * Puts a failed flush's entries back into the current map, adding to any
   * entry accrued since. An entry with no counterpart is put back only while
   * the map is under the bound `add` last saw; the rest are dropped and their
   * adds counted.
   */
  #mergeBack(entries: readonly Pending[]): void {
    for (const entry of entries) {
      const now = this.#pending.get(entry.tenant, entry.period, entry.metric);
      if (now !== undefined) {
        now.value += entry.value;
        now.adds += entry.adds;
      } else if (this.#pending.size < this.#maxPending) {
        this.#pending.add(entry);
      } else {
        this.#dropped += entry.adds;
      }
    }
  }
}

/** A meter of its own: a test's second "isolate". Each runtime holds one (src/runtime.ts), with its key usage as the rider. */
export function createUsageMeter(rider: MeterRider | null = null): UsageMeter {
  return new UsageMeter(rider);
}

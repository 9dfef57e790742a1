// Usage tracking (DESIGN §6): each admitted keyed request adds to an
// in-isolate accumulator — per key the count, the last use and the address it
// came from; per tenant and UTC month the `requests` metric — and the
// accumulator is written to D1 in the background (waitUntil) at most once per
// usage.flush_interval_s. It never blocks or fails a request: recording is a
// Map update, the flush's errors are logged and its entries put back. The
// accumulator holds at most usage.max_pending distinct entries; past that, new
// entries are dropped and counted (a key already pending still counts).
import type { Db } from "../db/client";
import { addKeyUsage } from "../db/keys";
import { addMonthlyUsage, periodOf } from "../db/usage-monthly";

interface KeyPending {
  count: number;
  lastUsedAtMs: number;
  lastUsedFrom: string;
}

/** Statements per D1 batch when flushing. */
const FLUSH_BATCH_STATEMENTS = 50;

export interface UsageTrackerStats {
  /** Distinct keys and tenant metrics waiting for the next flush. */
  readonly pending: number;
  /** Uses dropped because the accumulator was full (each dropped request counts once). */
  readonly dropped: number;
  readonly flushes: number;
  readonly failedFlushes: number;
}

export class UsageTracker {
  #keys = new Map<string, KeyPending>();
  /** `tenant \n period \n metric` → amount. */
  #metrics = new Map<string, number>();
  #dropped = 0;
  #flushes = 0;
  #failedFlushes = 0;
  #flushing = false;
  /** When the next flush may run; set by the first use after a flush. */
  #nextFlushAtMs: number | null = null;
  /** The current UTC month, `YYYY-MM`, valid in [#periodFromMs, #periodUntilMs): saves a Date per request. */
  #period = "";
  #periodFromMs = 0;
  #periodUntilMs = 0;

  get stats(): UsageTrackerStats {
    return { pending: this.#keys.size + this.#metrics.size, dropped: this.#dropped, flushes: this.#flushes, failedFlushes: this.#failedFlushes };
  }

  /** One admitted request of key `keyId` (of `tenant`) from `address` at `atMs`. */
  recordKeyUse(keyId: string, tenant: string, address: string, atMs: number, maxPending: number, intervalMs: number): void {
    const pending = this.#keys.get(keyId);
    if (pending !== undefined) {
      pending.count += 1;
      if (atMs >= pending.lastUsedAtMs) {
        pending.lastUsedAtMs = atMs;
        pending.lastUsedFrom = address;
      }
    } else if (this.#keys.size + this.#metrics.size < maxPending) {
      this.#keys.set(keyId, { count: 1, lastUsedAtMs: atMs, lastUsedFrom: address });
    } else {
      this.#dropped += 1;
    }
    this.addTenantMetric(tenant, "requests", 1, atMs, maxPending, intervalMs);
    this.#nextFlushAtMs ??= atMs + intervalMs;
  }

  /** Adds `amount` to a tenant's monthly metric (the month of `atMs`, UTC). */
  addTenantMetric(tenant: string, metric: string, amount: number, atMs: number, maxPending: number, intervalMs: number): void {
    const id = `${tenant}\n${this.#periodOf(atMs)}\n${metric}`;
    const value = this.#metrics.get(id);
    if (value !== undefined) this.#metrics.set(id, value + amount);
    else if (this.#keys.size + this.#metrics.size < maxPending) this.#metrics.set(id, amount);
    else this.#dropped += 1;
    this.#nextFlushAtMs ??= atMs + intervalMs;
  }

  #periodOf(atMs: number): string {
    if (atMs < this.#periodFromMs || atMs >= this.#periodUntilMs) {
      const at = new Date(atMs);
      this.#period = periodOf(atMs);
      this.#periodFromMs = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1);
      this.#periodUntilMs = Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1);
    }
    return this.#period;
  }

  /**
   * Starts a flush when one is due at `nowMs` and none is running, handing
   * its promise to `waitUntil`. Returns whether it started one. `db` is only
   * called when a flush starts.
   */
  maybeFlush(db: () => Db, nowMs: number, intervalMs: number, waitUntil: (work: Promise<unknown>) => void): boolean {
    if (this.#flushing || this.#nextFlushAtMs === null || nowMs < this.#nextFlushAtMs) return false;
    if (this.#keys.size === 0 && this.#metrics.size === 0) {
      this.#nextFlushAtMs = null;
      return false;
    }
    const keys = this.#keys;
    const metrics = this.#metrics;
    this.#keys = new Map();
    this.#metrics = new Map();
    this.#nextFlushAtMs = nowMs + intervalMs;
    this.#flushing = true;
    waitUntil(this.#write(db, keys, metrics, intervalMs));
    return true;
  }

  async #write(db: () => Db, keys: Map<string, KeyPending>, metrics: Map<string, number>, intervalMs: number): Promise<void> {
    const keyEntries = [...keys];
    const metricEntries = [...metrics];
    // Entries are written in order, a batch (one transaction) at a time; on a
    // failure the entries from the failed batch on are put back for the next
    // flush, so nothing is lost or counted twice.
    let written = 0;
    try {
      const handle = db();
      const statements = [
        ...keyEntries.map(([id, p]) => addKeyUsage(handle, { id, count: p.count, lastUsedAtMs: p.lastUsedAtMs, lastUsedFrom: p.lastUsedFrom })),
        ...metricEntries.map(([id, amount]) => {
          const [tenant = "", period = "", metric = ""] = id.split("\n");
          return addMonthlyUsage(handle, tenant, period, metric, amount);
        }),
      ];
      for (let i = 0; i < statements.length; i += FLUSH_BATCH_STATEMENTS) {
        const [first, ...rest] = statements.slice(i, i + FLUSH_BATCH_STATEMENTS);
        if (first !== undefined) await handle.batch([first, ...rest]);
        written = Math.min(statements.length, i + FLUSH_BATCH_STATEMENTS);
      }
      this.#flushes += 1;
    } catch (error) {
      this.#failedFlushes += 1;
      this.#mergeBack(keyEntries.slice(written), metricEntries.slice(Math.max(0, written - keyEntries.length)));
      this.#nextFlushAtMs ??= Date.now() + intervalMs;
      console.warn(JSON.stringify({ level: "warn", at_unix_ms: Date.now(), event: "usage_flush_failed", error: error instanceof Error ? error.name : "unknown" }));
    } finally {
      this.#flushing = false;
    }
  }

  #mergeBack(keys: readonly (readonly [string, KeyPending])[], metrics: readonly (readonly [string, number])[]): void {
    for (const [id, p] of keys) {
      const now = this.#keys.get(id);
      if (now !== undefined) {
        now.count += p.count;
        if (p.lastUsedAtMs > now.lastUsedAtMs) {
          now.lastUsedAtMs = p.lastUsedAtMs;
          now.lastUsedFrom = p.lastUsedFrom;
        }
      } else this.#keys.set(id, p);
    }
    for (const [id, amount] of metrics) this.#metrics.set(id, (this.#metrics.get(id) ?? 0) + amount);
  }

  /** Drops everything pending (tests). */
  reset(): void {
    this.#keys.clear();
    this.#metrics.clear();
    this.#dropped = 0;
    this.#nextFlushAtMs = null;
  }
}

/** The isolate's tracker. Bounded by usage.max_pending. */
export const usageTracker = new UsageTracker();

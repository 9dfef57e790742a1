// Usage tracking of managed keys: each admitted keyed request
// adds to an in-isolate accumulator — per key the count, the last use and the
// address it came from — written to api_keys in the background with metering:
// whatever flushes the isolate's metering (src/db/usage-meter.ts, at most once
// per usage.flush_interval_s while busy, soon after a request on a quiet
// isolate) writes the keys' use too, so a used key never reads "never / 0"
// while its tenant's usage already counts the request, and an isolate that
// goes away loses no more of one than of the other. It never blocks or fails
// a request: recording is a Map update; a flush's errors are logged and its
// entries put back within the bound. The accumulator holds at most
// usage.max_pending keys; past that, uses of new keys are dropped and counted
// (a key already pending still counts), also when a failed flush's keys are
// put back.
import type { Db } from "../db/client";
import { addKeyUsage } from "../db/keys";
import type { MeterRider } from "../db/usage-meter";
import { errorName, log } from "../log/logger";

interface KeyPending {
  count: number;
  lastUsedAtMs: number;
  lastUsedFrom: string;
}

/** Statements per D1 batch (one transaction) when flushing. */
const FLUSH_BATCH_STATEMENTS = 50;

export interface UsageTrackerStats {
  /** Keys waiting for the next flush. */
  readonly pending: number;
  /** Uses dropped because the accumulator was full (each dropped request counts once). */
  readonly dropped: number;
  readonly flushes: number;
  readonly failedFlushes: number;
}

export class UsageTracker implements MeterRider {
  #keys = new Map<string, KeyPending>();
  /** The bound the last recorded use was given: a failed flush puts keys back within it. */
  #maxPending = 0;
  #dropped = 0;
  #flushes = 0;
  #failedFlushes = 0;
  #flushing = false;

  get stats(): UsageTrackerStats {
    return { pending: this.#keys.size, dropped: this.#dropped, flushes: this.#flushes, failedFlushes: this.#failedFlushes };
  }

  /** One admitted request of key `keyId` from `address` at `atMs`. */
  recordKeyUse(keyId: string, address: string, atMs: number, maxPending: number): void {
    this.#maxPending = maxPending;
    const pending = this.#keys.get(keyId);
    if (pending !== undefined) {
      pending.count += 1;
      if (atMs >= pending.lastUsedAtMs) {
        pending.lastUsedAtMs = atMs;
        pending.lastUsedFrom = address;
      }
    } else if (this.#keys.size < maxPending) {
      this.#keys.set(keyId, { count: 1, lastUsedAtMs: atMs, lastUsedFrom: address });
    } else {
      this.#dropped += 1;
    }
  }

  /** Whether any key's use waits to be written. */
  get hasPending(): boolean {
    return this.#keys.size > 0;
  }

  /**
   * Writes every pending use now; the meter calls it as it flushes. `db` is
   * only called when something is pending. A flush still being written keeps
   * what came since for the next one. Never rejects.
   */
  flush(db: () => Db): Promise<void> {
    if (this.#flushing || this.#keys.size === 0) return Promise.resolve();
    const keys = [...this.#keys];
    this.#keys = new Map();
    this.#flushing = true;
    return this.#write(db, keys);
  }

  async #write(db: () => Db, keys: readonly (readonly [string, KeyPending])[]): Promise<void> {
    // Written a batch at a time; on a failure the keys from the failed batch
    // on are put back for the next flush, so nothing is lost or counted twice.
    let written = 0;
    try {
      const handle = db();
      for (let i = 0; i < keys.length; i += FLUSH_BATCH_STATEMENTS) {
        const [first, ...rest] = keys
          .slice(i, i + FLUSH_BATCH_STATEMENTS)
          .map(([id, p]) => addKeyUsage(handle, { id, count: p.count, lastUsedAtMs: p.lastUsedAtMs, lastUsedFrom: p.lastUsedFrom }));
        if (first !== undefined) await handle.batch([first, ...rest]);
        written = Math.min(keys.length, i + FLUSH_BATCH_STATEMENTS);
      }
      this.#flushes += 1;
    } catch (error) {
      this.#failedFlushes += 1;
      this.#mergeBack(keys.slice(written));
      log.warn("usage_flush_failed", { error: errorName(error) });
    } finally {
      this.#flushing = false;
    }
  }

  #mergeBack(keys: readonly (readonly [string, KeyPending])[]): void {
    for (const [id, p] of keys) {
      const now = this.#keys.get(id);
      if (now !== undefined) {
        now.count += p.count;
        if (p.lastUsedAtMs > now.lastUsedAtMs) {
          now.lastUsedAtMs = p.lastUsedAtMs;
          now.lastUsedFrom = p.lastUsedFrom;
        }
      } else if (this.#keys.size < this.#maxPending) {
        this.#keys.set(id, p);
      } else {
        // Full: the accumulator stays within its bound (issue 10 item 14); the uses are lost and counted.
        this.#dropped += p.count;
      }
    }
  }
}


// The isolate's traffic counts (src/engine/traffic-counts.ts) and their
// flush to D1, beside metering: at most once per usage.flush_interval_s,
// in the background (waitUntil), never blocking or failing a request. A
// flush that fails puts its minutes back; the counts stay in the isolate,
// bounded (the oldest minutes dropped first, and counted: the next flush
// logs how many). Refused addresses are held raw only in memory and become
// keyed digests (`hmac:<hex>`) when written, so D1 never holds an address.
import { errorName, log } from "../log/logger";
import { flushedMinute, MINUTE_MS, type MinuteCounts, TrafficCounts } from "../engine/traffic-counts";
import type { Db } from "./client";
import { addTraffic, type RefusedRow, type ShadowCallerRow, type ShadowRow, type TrafficRow } from "./traffic";

/** Minutes held between flushes (and while D1 is down): two hours. */
export const TRAFFIC_MAX_MINUTES = 120;
/** (tenant, decision) cells per minute. */
export const TRAFFIC_MAX_CELLS = 5_000;
/** Refused callers each minute's sketch holds, and how many of them a flush writes. */
export const TRAFFIC_SKETCH_CAPACITY = 64;
export const TRAFFIC_TOP_WRITTEN = 20;
/** Digests of refused addresses remembered so `GET /callers/hmac:…` can be explained on this isolate. */
const MAX_REMEMBERED_DIGESTS = 4_096;

export interface TrafficFlushOptions {
  readonly retentionMs: number;
  /** The keyed digest of an `ip:` caller key (the audit subject), computed off the request path. */
  readonly digest: (callerKey: string) => Promise<string>;
}

export class TrafficRecorder {
  readonly counts = new TrafficCounts({ maxMinutes: TRAFFIC_MAX_MINUTES, maxCells: TRAFFIC_MAX_CELLS, sketchCapacity: TRAFFIC_SKETCH_CAPACITY });
  #inFlight: Promise<void> | null = null;
  #lastFlushMs: number | null = null;
  #lastPruneMs = 0;
  #reportedDropped = 0;
  /** `hmac:<hex>` → the caller key it digests, newest last, bounded. */
  readonly #digests = new Map<string, string>();

  /** Counts one request (see TrafficCounts.count). */
  count(nowMs: number, tenant: string | null, decision: string, refusedCaller: string | null): void {
    this.counts.count(nowMs, tenant, decision, refusedCaller);
    this.#lastFlushMs ??= nowMs;
  }

  /** Counts one request a shadow policy would have refused (see TrafficCounts.countShadow). */
  countShadow(nowMs: number, tenant: string | null, policy: string, code: string, caller: string | null): void {
    this.counts.countShadow(nowMs, tenant, policy, code, caller);
    this.#lastFlushMs ??= nowMs;
  }

  /** Whether a flush could start now: something held, the interval passed, none running. */
  flushDue(nowMs: number, intervalMs: number): boolean {
    return this.#inFlight === null && this.#lastFlushMs !== null && nowMs - this.#lastFlushMs >= intervalMs;
  }

  /** The caller key behind a digest this isolate wrote recently, or null. */
  callerOf(digest: string): string | null {
    return this.#digests.get(digest) ?? null;
  }

  /** Starts a flush when one is due and hands it to `waitUntil`. Never throws. */
  maybeFlush(db: () => Db, nowMs: number, intervalMs: number, options: TrafficFlushOptions, waitUntil: (p: Promise<unknown>) => void): boolean {
    if (!this.flushDue(nowMs, intervalMs)) return false;
    const work = this.#flush(db, nowMs, options);
    try {
      waitUntil(work);
    } catch {
      // No execution context: the write still runs.
    }
    return true;
  }

  /** Writes everything held now, after any flush running (tests, the admin API's read-your-writes). Never rejects. */
  async flushNow(db: Db, nowMs: number, options: TrafficFlushOptions): Promise<void> {
    while (this.#inFlight !== null) await this.#inFlight;
    if (this.counts.pendingMinutes === 0) return;
    await this.#flush(() => db, nowMs, options);
  }

  #flush(db: () => Db, nowMs: number, options: TrafficFlushOptions): Promise<void> {
    const minutes = this.counts.take();
    this.#lastFlushMs = nowMs;
    const work = this.#write(db, minutes, nowMs, options).finally(() => {
      this.#inFlight = null;
    });
    this.#inFlight = work;
    return work;
  }

  async #write(db: () => Db, minutes: MinuteCounts[], nowMs: number, options: TrafficFlushOptions): Promise<void> {
    const dropped = this.counts.droppedMinutes + this.counts.droppedCounts;
    if (dropped > this.#reportedDropped) {
      log.warn("traffic_counts_dropped", { minutes: this.counts.droppedMinutes, counts: this.counts.droppedCounts });
      this.#reportedDropped = dropped;
    }
    if (minutes.length === 0) return;
    try {
      const rows: TrafficRow[] = [];
      const refused: RefusedRow[] = [];
      const shadowRows: ShadowRow[] = [];
      const shadowCallers: ShadowCallerRow[] = [];
      for (const minute of minutes) {
        const flushed = flushedMinute(minute, TRAFFIC_TOP_WRITTEN);
        for (const row of flushed.rows) rows.push({ minuteMs: flushed.minuteMs, ...row });
        for (const hitter of flushed.topRefused) {
          const caller = hitter.item.startsWith("ip:") ? await this.#digestOf(hitter.item, options) : hitter.item;
          refused.push({ minuteMs: flushed.minuteMs, caller, tenant: hitter.tag, count: hitter.count, error: hitter.error });
        }
        for (const policy of flushed.shadow) {
          for (const row of policy.rows) shadowRows.push({ minuteMs: flushed.minuteMs, policy: policy.policy, ...row });
          for (const hitter of policy.callers) {
            const caller = hitter.item.startsWith("ip:") ? await this.#digestOf(hitter.item, options) : hitter.item;
            shadowCallers.push({ minuteMs: flushed.minuteMs, policy: policy.policy, caller, tenant: hitter.tag, count: hitter.count, error: hitter.error });
          }
        }
      }
      // Pruned at most once an hour: a delete per flush would cost more than the rows it finds.
      const prune = nowMs - this.#lastPruneMs >= 3_600_000 ? nowMs - options.retentionMs - ((nowMs - options.retentionMs) % MINUTE_MS) : null;
      await addTraffic(db(), rows, refused, prune, { rows: shadowRows, callers: shadowCallers });
      if (prune !== null) this.#lastPruneMs = nowMs;
    } catch (error) {
      this.counts.putBack(minutes);
      log.warn("traffic_flush_failed", { error: errorName(error), minutes_held: this.counts.pendingMinutes });
    }
  }

  async #digestOf(callerKey: string, options: TrafficFlushOptions): Promise<string> {
    const digest = await options.digest(callerKey);
    this.#digests.delete(digest);
    this.#digests.set(digest, callerKey);
    if (this.#digests.size > MAX_REMEMBERED_DIGESTS) this.#digests.delete(this.#digests.keys().next().value!);
    return digest;
  }
}

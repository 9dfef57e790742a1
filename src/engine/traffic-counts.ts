// Traffic counts of one isolate (what `GET /traffic` sums): requests per
// UTC minute, tenant (or `anonymous`) and decision, and per minute a
// Space-Saving sketch of the callers refused. Pure: the minute comes from the
// `nowMs` each count is given. Bounded: at most `maxMinutes` minutes are
// held between flushes (a flush that fails puts its minutes back; past the
// bound the oldest are dropped first and counted in `droppedMinutes`), and
// each minute holds at most `maxCells` (tenant, decision) cells (past that, a
// new cell's count goes to `droppedCounts`).
//
// Beside them, what shadow policies would have refused: per minute, policy,
// tenant and code, with a sketch per policy of the callers (at most
// SHADOW_POLICIES_PER_MINUTE policies a minute; past it, a new one's count
// goes to `droppedCounts` too).
import { SpaceSaving, type HeavyHitter } from "./space-saving";

export const MINUTE_MS = 60_000;
/** Shadow policies one minute holds counts for (each with a caller sketch). */
export const SHADOW_POLICIES_PER_MINUTE = 64;
/** Callers each shadow policy's sketch holds per minute. */
export const SHADOW_SKETCH_CAPACITY = 16;
/** The tenant column of requests that have none. */
export const ANONYMOUS_TENANT = "anonymous";

export interface MinuteCounts {
  /** The minute's first ms (UTC). */
  readonly minuteMs: number;
  /** `tenant` → `decision` → requests. */
  readonly cells: Map<string, Map<string, number>>;
  cellCount: number;
  /** Refused callers (explain-able ids, tagged with their tenant), or null when none was refused. */
  refused: SpaceSaving | null;
  /** Shadow policy → what it would have refused this minute; null when nothing was. */
  shadow: Map<string, ShadowCell> | null;
}

/** One shadow policy's would-be refusals in a minute. */
export interface ShadowCell {
  /** `tenant` → `code` → requests. */
  readonly counts: Map<string, Map<string, number>>;
  /** The callers it would have refused (explain-able ids, tagged with their tenant). */
  readonly callers: SpaceSaving;
}

export interface TrafficBounds {
  readonly maxMinutes: number;
  readonly maxCells: number;
  readonly sketchCapacity: number;
}

export interface FlushedMinute {
  readonly minuteMs: number;
  readonly rows: readonly { readonly tenant: string; readonly decision: string; readonly count: number }[];
  readonly topRefused: readonly HeavyHitter[];
  /** Per shadow policy: its counts by tenant and code, and its top callers. */
  readonly shadow: readonly { readonly policy: string; readonly rows: readonly { readonly tenant: string; readonly decision: string; readonly count: number }[]; readonly callers: readonly HeavyHitter[] }[];
}

export class TrafficCounts {
  readonly #bounds: TrafficBounds;
  /** Oldest first; the last is the current minute. */
  #minutes: MinuteCounts[] = [];
  /** The minute the last count went to (null after a take). */
  #current: MinuteCounts | null = null;
  #droppedMinutes = 0;
  #droppedCounts = 0;

  constructor(bounds: TrafficBounds) {
    this.#bounds = bounds;
  }

  get droppedMinutes(): number {
    return this.#droppedMinutes;
  }

  get droppedCounts(): number {
    return this.#droppedCounts;
  }

  /** Minutes held, the current one included. */
  get pendingMinutes(): number {
    return this.#minutes.length;
  }

  #minute(nowMs: number): MinuteCounts {
    // Most requests fall in the minute of the one before: a range check, no division.
    const current = this.#current;
    if (current !== null && nowMs >= current.minuteMs && nowMs < current.minuteMs + MINUTE_MS) return current;
    const minuteMs = nowMs - (nowMs % MINUTE_MS);
    const held = this.#minutes.find((m) => m.minuteMs === minuteMs);
    if (held !== undefined) return (this.#current = held);
    const fresh: MinuteCounts = { minuteMs, cells: new Map(), cellCount: 0, refused: null, shadow: null };
    this.#minutes.push(fresh);
    // A clock that steps back makes an older minute: keep them in order.
    if (this.#minutes.length > 1 && minuteMs < this.#minutes[this.#minutes.length - 2]!.minuteMs) this.#minutes.sort((a, b) => a.minuteMs - b.minuteMs);
    this.#trim();
    // A minute older than every one held, past the bound, was dropped (and counted) at once: its counts go nowhere.
    this.#current = this.#minutes.includes(fresh) ? fresh : null;
    return fresh;
  }

  #trim(): void {
    while (this.#minutes.length > this.#bounds.maxMinutes) {
      this.#minutes.shift();
      this.#droppedMinutes += 1;
    }
  }

  /**
   * Counts one request. `refusedCaller` is the caller's explain-able id when
   * the gateway refused it (never a raw address), else null.
   */
  count(nowMs: number, tenant: string | null, decision: string, refusedCaller: string | null): void {
    const minute = this.#minute(nowMs);
    const t = tenant ?? ANONYMOUS_TENANT;
    let byDecision = minute.cells.get(t);
    if (byDecision === undefined) {
      if (minute.cellCount >= this.#bounds.maxCells) {
        this.#droppedCounts += 1;
        return;
      }
      byDecision = new Map();
      minute.cells.set(t, byDecision);
    }
    const before = byDecision.get(decision);
    if (before === undefined) {
      if (minute.cellCount >= this.#bounds.maxCells) {
        this.#droppedCounts += 1;
        return;
      }
      minute.cellCount += 1;
      byDecision.set(decision, 1);
    } else {
      byDecision.set(decision, before + 1);
    }
    if (refusedCaller !== null) {
      minute.refused ??= new SpaceSaving(this.#bounds.sketchCapacity);
      minute.refused.add(refusedCaller, 1, t);
    }
  }

  /**
   * Counts one request a shadow policy would have refused with `code`;
   * `caller` is its explain-able id (never a raw address once written), or
   * null when unknown.
   */
  countShadow(nowMs: number, tenant: string | null, policy: string, code: string, caller: string | null): void {
    const minute = this.#minute(nowMs);
    minute.shadow ??= new Map();
    let cell = minute.shadow.get(policy);
    if (cell === undefined) {
      if (minute.shadow.size >= SHADOW_POLICIES_PER_MINUTE) {
        this.#droppedCounts += 1;
        return;
      }
      cell = { counts: new Map(), callers: new SpaceSaving(SHADOW_SKETCH_CAPACITY) };
      minute.shadow.set(policy, cell);
    }
    const t = tenant ?? ANONYMOUS_TENANT;
    addTo(cell.counts, t, code, 1);
    if (caller !== null) cell.callers.add(caller, 1, t);
  }

  /**
   * Takes every held minute for a flush (the current one too: its counts so
   * far are added, and it starts again from zero). The caller writes them
   * and calls `putBack` when the write failed.
   */
  take(): MinuteCounts[] {
    const taken = this.#minutes;
    this.#minutes = [];
    this.#current = null;
    return taken;
  }

  /** Puts minutes whose flush failed back, merged into any held since, within the bounds. */
  putBack(minutes: readonly MinuteCounts[]): void {
    for (const old of minutes) {
      const held = this.#minutes.find((m) => m.minuteMs === old.minuteMs);
      if (held === undefined) {
        this.#minutes.push(old);
        continue;
      }
      for (const [tenant, byDecision] of old.cells) {
        for (const [decision, n] of byDecision) {
          let target = held.cells.get(tenant);
          if (target === undefined) {
            target = new Map();
            held.cells.set(tenant, target);
          }
          const before = target.get(decision);
          if (before === undefined) held.cellCount += 1;
          target.set(decision, (before ?? 0) + n);
        }
      }
      if (old.refused !== null) {
        held.refused ??= new SpaceSaving(this.#bounds.sketchCapacity);
        for (const hitter of old.refused.top()) held.refused.add(hitter.item, hitter.count, hitter.tag);
      }
      if (old.shadow !== null) {
        held.shadow ??= new Map();
        for (const [policy, cell] of old.shadow) {
          const into = held.shadow.get(policy);
          if (into === undefined) {
            held.shadow.set(policy, cell);
            continue;
          }
          for (const [tenant, byCode] of cell.counts) for (const [code, n] of byCode) addTo(into.counts, tenant, code, n);
          for (const hitter of cell.callers.top()) into.callers.add(hitter.item, hitter.count, hitter.tag);
        }
      }
    }
    this.#minutes.sort((a, b) => a.minuteMs - b.minuteMs);
    this.#trim();
    this.#current = null;
  }
}

/** A held minute as rows to write: one per (tenant, decision), and its top refused callers. */
export function flushedMinute(minute: MinuteCounts, topN: number): FlushedMinute {
  const rows: { tenant: string; decision: string; count: number }[] = [];
  for (const [tenant, byDecision] of minute.cells) for (const [decision, count] of byDecision) rows.push({ tenant, decision, count });
  const topRefused = minute.refused === null ? [] : minute.refused.top(topN);
  const shadow = [...(minute.shadow ?? new Map<string, ShadowCell>())].map(([policy, cell]) => {
    const counts: { tenant: string; decision: string; count: number }[] = [];
    for (const [tenant, byCode] of cell.counts) for (const [decision, count] of byCode) counts.push({ tenant, decision, count });
    return { policy, rows: counts, callers: cell.callers.top(topN) };
  });
  return { minuteMs: minute.minuteMs, rows, topRefused, shadow };
}

function addTo(counts: Map<string, Map<string, number>>, tenant: string, code: string, n: number): void {
  let byCode = counts.get(tenant);
  if (byCode === undefined) counts.set(tenant, (byCode = new Map()));
  byCode.set(code, (byCode.get(code) ?? 0) + n);
}

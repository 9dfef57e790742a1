// Sustained-limiting detection: counts refusals
// per (caller, category) in fixed windows aligned to
// floor(nowMs / windowMs) * windowMs and reports a caller once per window, the
// moment its count passes the threshold (the 101st refusal with a threshold of
// 100). The caller writes the report as an audit event, off the request path.
//
// Per isolate, so a caller whose refusals spread over many isolates may pass
// the threshold in none: the audit log is a signal about noisy callers, not an
// exact count. Time comes in as `nowMs`; nothing here reads a clock.
//
// Memory is bounded: at most `maxEntries` callers. The Map is kept in order of
// last refusal (an entry moves to the end on each one), which with a clock
// that does not run backwards is also the order of window start, so the front
// holds the oldest windows: those are dropped first when a new caller needs
// room, and an entry of a past window is useless anyway (its next refusal
// starts from zero). A caller evicted mid-window starts again from zero and
// could be reported a second time in that window after passing the threshold
// again; a caller refused steadily stays at the back and is never the one
// evicted while quieter ones remain.

/** One caller passing the threshold in one window: the audit event's figures. */
export interface SustainedEvent {
  /** As received: a digest (sha256 hex of the subject), never the credential or address. */
  readonly callerKey: string;
  readonly category: string;
  /** The refusals counted in the window when it passed the threshold: threshold + 1. */
  readonly count: number;
  readonly windowStartMs: number;
}

export interface RejectionCounter {
  /**
   * Counts one refusal of `callerKey` in `category` at `nowMs` and returns
   * the event when this refusal is the one that passes `threshold` in the
   * window of `windowMs` that holds `nowMs`; null otherwise (also for a
   * refusal timed before the caller's current window, and for a threshold or
   * window that is not a positive number). Never throws.
   */
  record(callerKey: string, category: string, nowMs: number, threshold: number, windowMs: number): SustainedEvent | null;
  /** Callers tracked now (at most maxEntries). */
  readonly size: number;
}

interface Entry {
  windowStartMs: number;
  count: number;
  reported: boolean;
}

/** Callers each singleton tracks: ~10,000 × (a 64-character digest + a few numbers), about 2 MiB. */
export const REJECTION_COUNTER_MAX_ENTRIES = 10_000;

/** Needs the most callers to track; returns an empty counter (a test's own, or one of the module's bounded singletons). */
export function createRejectionCounter(maxEntries: number): RejectionCounter {
  const entries = new Map<string, Entry>();
  const capacity = Math.max(1, Math.floor(maxEntries));

  // Room is made a batch at a time. A Map keeps a deleted entry's place
  // until it is next rebuilt, and iteration starts at the front, so dropping
  // one caller per new one made each eviction step over every caller dropped
  // before it: under a flood of fresh addresses (a 401 each) that scan was
  // a tenth of the gateway's time. One pass that drops 1/64 of the callers
  // serves the next 1/64 new ones.
  const batch = Math.max(1, Math.floor(capacity / 64));

  /** Makes room for new callers: past windows first, then the least recently refused, until `batch` slots are free. */
  function evictFor(windowStartMs: number): void {
    for (const [id, entry] of entries) {
      if (entries.size <= capacity - batch && entry.windowStartMs >= windowStartMs) return;
      entries.delete(id);
    }
  }

  return {
    record(callerKey, category, nowMs, threshold, windowMs) {
      if (!(windowMs > 0) || !(threshold > 0) || !Number.isFinite(nowMs)) return null;
      const windowStartMs = Math.floor(nowMs / windowMs) * windowMs;
      // Length-prefixed, so no category and caller pair can collide with another.
      const id = `${category.length}:${category}${callerKey}`;
      let entry = entries.get(id);
      if (entry !== undefined) {
        if (windowStartMs < entry.windowStartMs) return null;
        entries.delete(id);
        if (windowStartMs > entry.windowStartMs) entry = { windowStartMs, count: 0, reported: false };
      } else {
        if (entries.size >= capacity) evictFor(windowStartMs);
        entry = { windowStartMs, count: 0, reported: false };
      }
      entries.set(id, entry);
      entry.count += 1;
      if (entry.reported || entry.count <= threshold) return null;
      entry.reported = true;
      return { callerKey, category, count: entry.count, windowStartMs };
    },
    get size() {
      return entries.size;
    },
  };
}

/** Refusals by a rate limit (429 rate_limited), per caller and limit category. */
export const rateLimitRejections = createRejectionCounter(REJECTION_COUNTER_MAX_ENTRIES);

/** Refused credentials (the auth_failures category), per client. */
export const authFailureRejections = createRejectionCounter(REJECTION_COUNTER_MAX_ENTRIES);

// Which request-log lines are written (`request_log`, docs/operations.md):
//
// - "all" (the default): every request's line, refusals within the cap below;
// - "refusals": only the lines of requests the gateway refused, within the cap;
// - "sampled": each admitted request's line with probability
//   `request_log_sample`, refusals within the cap;
// - "off": nothing.
//
// The cap: at most `request_log_refusals_per_s` refusal lines per isolate in
// each wall-clock second (floor(nowMs / 1000)). The refusals past it are not
// written one by one: they are counted, by decision and by caller, and one
// `refusals_summarised` line per second gives those counts, so a flood of
// refusals costs a counter update each instead of a console.log each (in
// workerd the line's console.log was most of a refusal's CPU). Nothing is
// lost from the counts: `logged` + the sum of `by_decision` is every refusal
// of that second.
//
// The summary of a second is written by the first refusal of a later second,
// or, when none comes, by a timer that the first summarised refusal of the
// second starts (kept alive with waitUntil), at the second's end. Callers in
// it are named as the audit log names them (`key:<id>` as is; addresses and
// JWT subjects as keyed digests), through `nameCallers`; never a raw address.
//
// Top callers are counted with Space-Saving over TOP_CALLER_SLOTS counters: a
// caller with more than 1/TOP_CALLER_SLOTS of a second's summarised refusals
// is always among them, and each count is at most the caller's true count
// plus the smallest counter's (an over-estimate only when the slots were
// full). Per isolate: a flood spread over many isolates gives one summary per
// isolate per second.
import { SpaceSaving } from "../engine/space-saving";
import type { Background } from "../utils/wait-until";
import { keepAlive } from "../utils/wait-until";

export type RequestLogMode = "all" | "refusals" | "sampled" | "off";

/** Counters kept per second for the top callers; memory is bounded by this, whatever the flood. */
export const TOP_CALLER_SLOTS = 16;
/** Callers a summary line names. */
export const TOP_CALLERS_LOGGED = 5;
const WINDOW_MS = 1000;

export interface RequestLogPolicyOptions {
  readonly mode: RequestLogMode;
  /** "sampled": the share of admitted requests whose line is written, 0–1. */
  readonly sample: number;
  /** Refusal lines written one by one per second; past them, the summary. */
  readonly refusalsPerS: number;
  /** Writes one finished line (console.log in production, a list in tests). */
  readonly write: (line: string) => void;
  /** Safe names for caller keys, in the same order (digests for addresses). */
  readonly nameCallers: (callerKeys: readonly string[]) => Promise<readonly string[]> | readonly string[];
  /** 0 ≤ x < 1; Math.random unless a test holds it. */
  readonly random?: () => number;
  /** Runs `fn` after `ms` (the end of a second with summarised refusals); default setTimeout, kept alive by the request's context. */
  readonly later?: (ms: number, fn: () => Promise<void>, ctx: Background | null) => void;
}

/** What one summarised second holds. */
interface Window {
  readonly second: number;
  logged: number;
  summarised: number;
  readonly byDecision: Map<string, number>;
  callers: SpaceSaving;
  /** The tail timer is started once per window (what it summarised after the timer fired waits for the next second's first refusal). */
  timed: boolean;
}

/** The fields of one `refusals_summarised` line (the logger adds level, at_unix_ms and event). */
export interface RefusalSummary {
  readonly window_start_unix_ms: number;
  readonly window_s: 1;
  /** Refusal lines written one by one in that second, up to this line. */
  readonly logged: number;
  /** Refusals counted here instead of written. */
  readonly summarised: number;
  readonly by_decision: Readonly<Record<string, number>>;
  /** Up to TOP_CALLERS_LOGGED callers, most refused first, by their safe name. */
  readonly top_callers: Readonly<Record<string, number>>;
}

function defaultLater(ms: number, fn: () => Promise<void>, ctx: Background | null): void {
  keepAlive(ctx, new Promise<void>((resolve) => setTimeout(resolve, ms)).then(fn));
}

/** One per runtime: the request log's mode, its per-second refusal cap and the summaries. */
export class RequestLogPolicy {
  readonly mode: RequestLogMode;
  readonly #sample: number;
  readonly #cap: number;
  readonly #write: (line: string) => void;
  readonly #name: RequestLogPolicyOptions["nameCallers"];
  readonly #random: () => number;
  readonly #later: NonNullable<RequestLogPolicyOptions["later"]>;
  #window: Window | null = null;

  constructor(options: RequestLogPolicyOptions) {
    this.mode = options.mode;
    this.#sample = options.sample;
    this.#cap = options.refusalsPerS;
    this.#write = options.write;
    this.#name = options.nameCallers;
    this.#random = options.random ?? Math.random;
    this.#later = options.later ?? defaultLater;
  }

  /** Whether an admitted (forwarded, exempt or `off`) request's line is written. */
  admitted(): boolean {
    const mode = this.mode;
    if (mode === "all") return true;
    if (mode === "sampled") return this.#random() < this.#sample;
    return false;
  }

  /**
   * One refusal at `nowMs` with this decision, by this caller key: true when
   * its own line is to be written (the caller builds and writes it), false
   * when it is counted into its second's summary instead (or the log is off).
   */
  refusal(decision: string, callerKey: string, nowMs: number, ctx: Background | null): boolean {
    if (this.mode === "off") return false;
    const second = Math.floor(nowMs / WINDOW_MS);
    let w = this.#window;
    if (w === null || w.second !== second) {
      // A refusal of an earlier second (a clock that stepped back) counts in the current window.
      if (w === null || second > w.second) {
        // Naming the callers may wait on I/O (the digest key): kept alive past this request.
        if (w !== null) keepAlive(ctx, this.#emit(w));
        w = { second, logged: 0, summarised: 0, byDecision: new Map(), callers: new SpaceSaving(TOP_CALLER_SLOTS), timed: false };
        this.#window = w;
      }
    }
    if (w.logged < this.#cap) {
      w.logged++;
      return true;
    }
    w.summarised++;
    w.byDecision.set(decision, (w.byDecision.get(decision) ?? 0) + 1);
    w.callers.add(callerKey);
    if (!w.timed) {
      w.timed = true;
      const window = w;
      this.#later(Math.max(0, (second + 1) * WINDOW_MS - nowMs), () => this.#emit(window), ctx);
    }
    return false;
  }

  /** Writes the current second's summary now, if it has one (tests; the timer does it otherwise). */
  flush(): Promise<void> {
    const w = this.#window;
    return w === null ? Promise.resolve() : this.#emit(w);
  }

  // Writes what a window summarised and empties it: at the next second's
  // first refusal or by its timer, whichever comes first (the other finds
  // nothing to write). The window stays current after its timer: its
  // `logged` still caps that second, should the timer fire before the
  // clock has moved on (a held clock; in workerd the clock moves with I/O,
  // a timer's included), and what it counts then is written with the next
  // second's first refusal.
  #emit(w: Window): Promise<void> {
    if (w.summarised === 0) return Promise.resolve();
    const byDecision: Record<string, number> = {};
    for (const [decision, n] of w.byDecision) byDecision[decision] = n;
    const top = w.callers.top(TOP_CALLERS_LOGGED);
    const base = { window_start_unix_ms: w.second * WINDOW_MS, window_s: 1 as const, logged: w.logged, summarised: w.summarised, by_decision: byDecision };
    w.summarised = 0;
    w.byDecision.clear();
    w.callers = new SpaceSaving(TOP_CALLER_SLOTS);
    const write = (names: readonly string[] | null): void => {
      const topCallers: Record<string, number> = {};
      if (names !== null) top.forEach((hitter, i) => (topCallers[names[i]!] = (topCallers[names[i]!] ?? 0) + hitter.count));
      const summary: RefusalSummary = { ...base, top_callers: topCallers };
      this.#write(summaryLine(summary, (w.second + 1) * WINDOW_MS, names === null));
    };
    try {
      const named = this.#name(top.map((hitter) => hitter.item));
      if (!(named instanceof Promise)) {
        write(named);
        return Promise.resolve();
      }
      // Names that cannot be made (the digest key unreadable) leave the callers out; the counts stand.
      return named.then(write, () => write(null));
    } catch {
      write(null);
      return Promise.resolve();
    }
  }
}

/** The summary line, in the logger's shape (level, at_unix_ms, event first). */
export function summaryLine(summary: RefusalSummary, atMs: number, callersUnavailable: boolean): string {
  const fields = JSON.stringify(callersUnavailable ? { ...summary, top_callers_unavailable: true } : summary);
  return `{"level":"info","at_unix_ms":${atMs},"event":"refusals_summarised",${fields.slice(1)}`;
}

// Delay instead of refusing (a limit's `delay_max_ms`). A request refused
// only by limits that allow holding it for its exact retry delay is held and
// forwarded at the instant the limit allows, as if it had arrived then:
// its spend is admitted at that instant (admit() at nowMs + delay, the exact
// moment it fits) when it is held, so the next request of the same subject
// is given the following instant. That keeps held requests of one subject in
// arrival order, spaces them by the emission interval, and tells a request
// at once whether its wait would pass delay_max_ms (then it gets the usual
// 429). Waiting is a timer: no CPU while held.
//
// Bounds: at most `limiter.max_delayed` held at once per isolate, and a held
// request holds its in-flight slot (taken when it is held), so it counts
// against the in-flight bounds; past either bound → the usual 429.
//
// A client that hangs up while held (request.signal) is charged nothing: its
// spend is given back (refund(): never before now, so the instant it had
// reserved goes to whoever asks next) and its place and slot are freed. A
// held request whose limits changed meanwhile (an override landed) is given
// back and decided again at the instant it was due, not forwarded on the
// limits it was held under.
//
// Only the isolate's table holds requests: a request with a global-scope
// limit is decided as before (a reservation at a future instant cannot be
// asked of the ledger).
import type { Decision } from "../engine/gcra";

/** Waits `ms`; resolves true when the time has passed, false as soon as `signal` aborts. */
export type Sleep = (ms: number, signal: AbortSignal | null) => Promise<boolean>;

/** A timer (setTimeout: workerd runs no code of the request while it waits). */
export const timerSleep: Sleep = (ms, signal) =>
  new Promise<boolean>((resolve) => {
    if (signal?.aborted) {
      resolve(false);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(id);
      resolve(false);
    };
    const id = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** How many requests this isolate holds at once, bounded by `max`. One per runtime. */
export class HeldRequests {
  #count = 0;
  readonly max: number;

  constructor(max: number) {
    this.max = max;
  }

  get count(): number {
    return this.#count;
  }

  /** Takes a place; false when `max` are held. */
  tryHold(): boolean {
    if (this.#count >= this.max) return false;
    this.#count++;
    return true;
  }

  release(): void {
    if (this.#count > 0) this.#count--;
  }
}

/**
 * The delay a denied decision may be held for: its exact retry delay, when
 * every limit it did not fit allows holding that long (delay_max_ms); else −1.
 */
export function holdDelayMs(decision: Decision): number {
  if (decision.allowed || decision.retryAfterMs <= 0) return -1;
  const tightest = decision.tightest;
  const refs = decision.violated ?? (tightest === null ? [] : [tightest]);
  if (refs.length === 0) return -1;
  for (const ref of refs) if (ref.limit.scope === "global" || decision.retryAfterMs > ref.limit.delayMaxMs) return -1;
  return decision.retryAfterMs;
}

// Demand as Poisson arrivals over the whole deployment, at a rate that is
// constant within each segment of time (a step from 0 to 50,000/s is two
// segments). Arrivals are drawn one at a time as the clock reaches them, so
// a million requests never sit in the event queue at once.
import type { SimClock } from "./deployment";

export interface DemandSegment {
  readonly fromMs: number;
  readonly toMs: number;
  readonly perS: number;
}

/** Calls `arrive` at every arrival of `segments` (in time order), until the last segment ends. */
export function startDemand(clock: SimClock, segments: readonly DemandSegment[], arrive: (atMs: number) => void): void {
  let index = 0;
  let t = segments[0]?.fromMs ?? 0;
  const next = (): void => {
    while (index < segments.length) {
      const seg = segments[index]!;
      t = Math.max(t, seg.fromMs);
      if (seg.perS > 0) {
        const atMs = t + clock.exponentialMs(1000 / seg.perS, "demand");
        if (atMs < seg.toMs) {
          t = atMs;
          clock.at(atMs, () => {
            arrive(atMs);
            next();
          });
          return;
        }
      }
      t = seg.toMs;
      index++;
    }
  };
  next();
}

/** The last time of `segments`. */
export function demandEndMs(segments: readonly DemandSegment[]): number {
  return Math.max(0, ...segments.map((s) => s.toMs));
}

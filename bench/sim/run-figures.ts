// What every simulated run reports alike, global limit or budget: the
// requests that waited on the object and their added latency, the calls
// that reached it per second against its capacity, and the log lines the
// lease code wrote (counted by event instead of printed: a run can write
// thousands).
import type { SimObject } from "./deployment";
import { quantile } from "./measures";

export interface RunFigures {
  /** Requests that waited on the object, and their added latency (arrival to decision), ms. */
  readonly waited: number;
  readonly waitedP50Ms: number | null;
  readonly waitedP99Ms: number | null;
  readonly waitedMaxMs: number | null;
  /** Calls that reached the object: in all, per second (mean over the seconds with demand, the busiest), and the capacity. */
  readonly objectCalls: number;
  readonly callsPerSMean: number;
  readonly callsPerSMax: number;
  /** The busiest second, and the mean, from 5 s after demand began to its end (past the cold start of every isolate). */
  readonly callsPerSWarmMax: number;
  readonly callsPerSWarmMean: number;
  readonly capacityPerS: number;
  readonly maxQueueMs: number;
  /** Log lines by event. */
  readonly warnings: Readonly<Record<string, number>>;
}

/** The figures of a run whose requests arrived `demandPerS` a second, `waitedMs` of them having waited. */
export function runFigures(object: SimObject, capacityPerS: number, demandPerS: readonly number[], waitedMs: readonly number[], warnings: Readonly<Record<string, number>>): RunFigures {
  const calls = object.offeredPerS;
  const active = demandPerS.filter((n) => n > 0).length;
  const warmFrom = demandPerS.findIndex((n) => n > 0) + 5;
  let warmSum = 0;
  let warmSeconds = 0;
  for (let s = Math.max(0, warmFrom); s < demandPerS.length; s++) {
    if (demandPerS[s] === 0) continue;
    warmSum += calls[s] ?? 0;
    warmSeconds++;
  }
  return {
    waited: waitedMs.length,
    waitedP50Ms: quantile(waitedMs, 0.5),
    waitedP99Ms: quantile(waitedMs, 0.99),
    waitedMaxMs: quantile(waitedMs, 1),
    objectCalls: object.calls,
    callsPerSMean: active === 0 ? 0 : object.calls / active,
    callsPerSMax: Math.max(0, ...calls),
    callsPerSWarmMax: Math.max(0, ...calls.slice(warmFrom, demandPerS.length)),
    callsPerSWarmMean: warmSeconds === 0 ? 0 : warmSum / warmSeconds,
    capacityPerS,
    maxQueueMs: object.maxQueueMs,
    warnings,
  };
}

/** Counts the log lines written while a run goes (console.warn and console.error, by their `event`) into `into`; returns what puts the console back. */
export function countLogLines(into: Record<string, number>): () => void {
  const original = { warn: console.warn, error: console.error };
  const count = (line: unknown): void => {
    const event = typeof line === "string" ? /"event":"([^"]+)"/.exec(line)?.[1] : undefined;
    into[event ?? "other"] = (into[event ?? "other"] ?? 0) + 1;
  };
  console.warn = count;
  console.error = count;
  return () => {
    console.warn = original.warn;
    console.error = original.error;
  };
}

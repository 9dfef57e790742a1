// The deployment as a model: regions at their round-trip times from one
// Durable Object, isolates in each region that come and go, the object as a
// single FIFO server of fixed capacity (calls past it queue), and an object
// that can stop answering for a while. What runs inside an isolate and what
// the object decides are the real code (global-run.ts, ledger-model.ts);
// only time, distance and capacity are modelled here.
import { mulberry32 } from "../../test/prng";
import { EventQueue } from "./event-queue";

/** Round trip from each region to the object, ms: ten regions from the object's own continent to the far side of the world. */
export const REGION_RTT_MS: readonly number[] = [20, 35, 55, 75, 100, 125, 150, 180, 215, 250];

export interface DeploymentParams {
  readonly regionRttMs: readonly number[];
  readonly isolatesPerRegion: number;
  /** Mean life of an isolate, s (exponential); 0: isolates never go. */
  readonly meanIsolateLifeS: number;
  /** Calls the object serves a second; more queue. */
  readonly objectCallsPerS: number;
  /** The object stops answering in [fromMs, toMs): "hang" serves what queued once it is back, "fail" answers every call with an error. */
  readonly outage?: { readonly fromMs: number; readonly toMs: number; readonly mode: "hang" | "fail" };
  /** Reject a call not answered within this many ms of being sent (the object still does the work); absent: wait for ever. */
  readonly callTimeoutMs?: number;
  readonly seed: number;
}

/** The streams of randomness: each its own, so that what one setting changes (the calls it makes) leaves the others' draws (the requests, where they land, when isolates go) as they were. */
export type Stream = "demand" | "routing" | "churn" | "network";
const STREAMS: readonly Stream[] = ["demand", "routing", "churn", "network"];

/** Simulated time: the queue of what happens next, the seeded randomness, and the microtask drain between events. */
export class SimClock {
  readonly queue = new EventQueue<() => void>();
  readonly #streams: Record<Stream, () => number>;
  /** Set when a promise was settled: its reactions run (drain) before the clock moves. */
  settled = false;

  constructor(seed: number) {
    this.#streams = Object.fromEntries(STREAMS.map((name, i) => [name, mulberry32((seed * 4 + i) >>> 0)])) as Record<Stream, () => number>;
  }

  now = (): number => this.queue.nowMs;

  at(atMs: number, action: () => void): void {
    this.queue.push(atMs, action);
  }

  /** A uniform draw in [0, 1) from `stream`. */
  random(stream: Stream): number {
    return this.#streams[stream]();
  }

  /** Exponential with mean `meanMs`, from `stream`. */
  exponentialMs(meanMs: number, stream: Stream): number {
    return -Math.log(1 - this.random(stream)) * meanMs;
  }

  /** Runs every event up to and including `untilMs` (Infinity: until none is left), letting promise reactions run between events. */
  async run(untilMs = Number.POSITIVE_INFINITY): Promise<void> {
    const queue = this.queue;
    while (queue.size > 0 && queue.peekMs() <= untilMs) {
      queue.pop()();
      if (this.settled) {
        this.settled = false;
        await drainMicrotasks();
      }
    }
  }
}

// A macrotask: every promise reaction queued before it (and those they queue) has run when it fires.
const immediate = (globalThis as { setImmediate?: (callback: () => void) => unknown }).setImmediate;
function drainMicrotasks(): Promise<void> {
  return new Promise((resolve) => {
    if (immediate !== undefined) immediate(resolve);
    else setTimeout(resolve, 0);
  });
}

/** One Durable Object as a FIFO server: its calls per second offered (arrived) and served, and the longest wait in its queue. */
export class SimObject {
  readonly #clock: SimClock;
  readonly #params: DeploymentParams;
  readonly #serviceMs: number;
  #busyUntilMs = 0;
  /** Calls that reached the object, by second of arrival. */
  readonly offeredPerS: number[] = [];
  readonly servedPerS: number[] = [];
  maxQueueMs = 0;
  calls = 0;
  failedCalls = 0;
  timedOutCalls = 0;

  constructor(clock: SimClock, params: DeploymentParams) {
    this.#clock = clock;
    this.#params = params;
    this.#serviceMs = 1000 / params.objectCallsPerS;
  }

  /**
   * A call from an isolate `rttMs` away: it travels half the round trip
   * (with jitter), waits its turn, `serve` decides at the time it is served
   * (an Error answers as a failed call), and the answer travels back.
   */
  call<R>(rttMs: number, serve: () => R): Promise<R> {
    const clock = this.#clock;
    const sentMs = clock.now();
    return new Promise<R>((resolve, reject) => {
      let done = false;
      const settle = (ok: boolean, value: R | Error): void => {
        if (done) return;
        done = true;
        clock.settled = true;
        if (ok) resolve(value as R);
        else reject(value);
      };
      const timeoutMs = this.#params.callTimeoutMs;
      if (timeoutMs !== undefined) {
        clock.at(sentMs + timeoutMs, () => {
          if (!done) this.timedOutCalls++;
          settle(false, new Error("timed out"));
        });
      }
      clock.at(sentMs + this.#oneWayMs(rttMs), () => {
        const arrivedMs = clock.now();
        this.calls++;
        bump(this.offeredPerS, arrivedMs);
        const outage = this.#params.outage;
        const down = outage !== undefined && arrivedMs >= outage.fromMs && arrivedMs < outage.toMs;
        if (down && outage.mode === "fail") {
          this.failedCalls++;
          clock.at(arrivedMs + this.#oneWayMs(rttMs), () => settle(false, new Error("object unavailable")));
          return;
        }
        let startMs = Math.max(arrivedMs, this.#busyUntilMs);
        if (outage !== undefined && outage.mode === "hang" && startMs >= outage.fromMs && startMs < outage.toMs) startMs = outage.toMs;
        this.#busyUntilMs = startMs + this.#serviceMs;
        this.maxQueueMs = Math.max(this.maxQueueMs, startMs - arrivedMs);
        clock.at(startMs, () => {
          bump(this.servedPerS, startMs);
          let answer: R | Error;
          try {
            answer = serve();
          } catch (err) {
            answer = err instanceof Error ? err : new Error(String(err));
          }
          clock.at(startMs + this.#serviceMs + this.#oneWayMs(rttMs), () => settle(!(answer instanceof Error), answer));
        });
      });
    });
  }

  /** Half a round trip, ±10 %, and one call in a hundred a whole round trip later (a retransmit, a slow hop). */
  #oneWayMs(rttMs: number): number {
    const clock = this.#clock;
    return (rttMs / 2) * (0.9 + 0.2 * clock.random("network")) + (clock.random("network") < 0.01 ? rttMs : 0);
  }
}

function bump(perS: number[], atMs: number): void {
  const s = Math.floor(atMs / 1000);
  while (perS.length <= s) perS.push(0);
  perS[s]!++;
}

/** Where requests land: isolates of every region, each slot's isolate replaced by a fresh one when it goes. */
export class Isolates<I> {
  readonly #clock: SimClock;
  readonly #params: DeploymentParams;
  readonly #make: (region: number, rttMs: number) => I;
  readonly #slots: { region: number; isolate: I }[] = [];
  /** Every isolate that ever ran (the retired ones may still finish requests and hold leases). */
  readonly all: I[] = [];
  retired = 0;

  constructor(clock: SimClock, params: DeploymentParams, make: (region: number, rttMs: number) => I, onRetire: (isolate: I) => void, untilMs: number) {
    this.#clock = clock;
    this.#params = params;
    this.#make = make;
    params.regionRttMs.forEach((rttMs, region) => {
      for (let k = 0; k < params.isolatesPerRegion; k++) {
        const slot = { region, isolate: this.#spawn(region) };
        this.#slots.push(slot);
        if (params.meanIsolateLifeS > 0) this.#scheduleRetire(slot, onRetire, untilMs);
      }
    });
  }

  get count(): number {
    return this.#slots.length;
  }

  /** The isolate a new request lands on: any slot, equally likely (a tenant whose callers are everywhere). */
  pick(): I {
    return this.#slots[Math.floor(this.#clock.random("routing") * this.#slots.length)]!.isolate;
  }

  /** The isolates serving now. */
  current(): I[] {
    return this.#slots.map((s) => s.isolate);
  }

  #spawn(region: number): I {
    const isolate = this.#make(region, this.#params.regionRttMs[region]!);
    this.all.push(isolate);
    return isolate;
  }

  #scheduleRetire(slot: { region: number; isolate: I }, onRetire: (isolate: I) => void, untilMs: number): void {
    const atMs = this.#clock.now() + this.#clock.exponentialMs(this.#params.meanIsolateLifeS * 1000, "churn");
    if (atMs >= untilMs) return;
    this.#clock.at(atMs, () => {
      onRetire(slot.isolate);
      this.retired++;
      slot.isolate = this.#spawn(slot.region);
      this.#scheduleRetire(slot, onRetire, untilMs);
    });
  }
}

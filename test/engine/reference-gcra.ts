// A plain reference model of docs/design.md for the property test: a Map keyed by
// the real key string, TATs as BigInt in units of 1/count ms (so T = windowMs
// units exactly), no table, no hashing. Slow and obviously right.
//
// By default it never forgets a state. Given `eviction`, it keeps at most
// `capacity` live states per group (the table's sets). A key may sit in
// either of its two groups (`groupsOf`; they may be one): a new state goes to
// the first with room, and when both are full the state earned back soonest
// in them, in whole ms rounded up, is forgotten, the incoming one included:
// the incoming state is dropped when no live state there is earned back
// later. Among live states earned back in the same whole ms, the one with the
// lowest `tieOf` goes.
import type { Charge } from "../../src/engine/gcra";
import type { Limit } from "../../src/engine/limit";

export interface ReferenceFigures {
  chargeIndex: number;
  limit: Limit;
  remaining: number;
  resetMs: number;
}

export interface ReferenceDecision {
  allowed: boolean;
  retryAfterMs: number;
  deniedChargeIndex: number;
  tightest: ReferenceFigures | null;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return a <= 0n ? -(-a / b) : (a + b - 1n) / b;
}

function keyOf(charge: Pick<Charge, "subject" | "category">, limit: Limit): string {
  return `${charge.subject}\u0000${charge.category}\u0000${limit.count}/${limit.windowMs}/${limit.burst}`;
}

interface Entry {
  chargeIndex: number;
  limit: Limit;
  /** TAT · count before the call (0n: no state). */
  before: bigint;
  charge: Charge;
  cost: bigint;
  after: bigint;
}

export interface ReferenceEviction {
  capacity: number;
  groupsOf: (subject: string, category: string, limit: Limit) => readonly [first: number, second: number];
  tieOf: (subject: string, category: string, limit: Limit) => number;
}

interface State {
  /** TAT · count, in ms·count (units of 1/count ms). */
  tat: bigint;
  count: bigint;
  group: number;
  tie: number;
}

export class ReferenceGcra {
  readonly #states = new Map<string, State>();
  readonly #eviction: ReferenceEviction | null;
  /** How often a full group forgot a live state for the incoming one, and how often it forgot the incoming one. */
  evicted = 0;
  droppedIncoming = 0;

  constructor(eviction: ReferenceEviction | null = null) {
    this.#eviction = eviction;
  }

  #tatOf(key: string): bigint {
    return this.#states.get(key)?.tat ?? 0n;
  }

  /** Whether `key` holds state at whole-ms time t (not yet earned back). */
  holds(charge: Pick<Charge, "subject" | "category">, limit: Limit, nowMs: number): boolean {
    const state = this.#states.get(keyOf(charge, limit));
    return state !== undefined && state.tat > BigInt(Math.floor(nowMs)) * state.count;
  }

  #store(charge: Charge, limit: Limit, key: string, tat: bigint, nowMs: number): void {
    const count = BigInt(limit.count);
    const eviction = this.#eviction;
    if (eviction === null) {
      this.#states.set(key, { tat, count, group: 0, tie: 0 });
      return;
    }
    const t = BigInt(Math.floor(nowMs));
    const live = (s: State) => s.tat > t * s.count;
    const own = this.#states.get(key);
    if (own !== undefined && live(own)) {
      own.tat = tat;
      return;
    }
    const tie = eviction.tieOf(charge.subject, charge.category, limit);
    const groups = eviction.groupsOf(charge.subject, charge.category, limit);
    const liveIn = (group: number) => [...this.#states].filter(([, s]) => s.group === group && live(s));
    for (const group of groups) {
      if (liveIn(group).length < eviction.capacity) {
        this.#states.set(key, { tat, count, group, tie });
        return;
      }
    }
    const rivals = groups[0] === groups[1] ? liveIn(groups[0]) : [...liveIn(groups[0]), ...liveIn(groups[1])];
    const wholeMs = (s: State) => ceilDiv(s.tat, s.count);
    let soonest = rivals[0]!;
    for (const rival of rivals) {
      const a = wholeMs(rival[1]);
      const b = wholeMs(soonest[1]);
      if (a < b || (a === b && rival[1].tie < soonest[1].tie)) soonest = rival;
    }
    if (ceilDiv(tat, count) <= wholeMs(soonest[1])) {
      this.droppedIncoming++; // the incoming state is the one forgotten
      return;
    }
    this.evicted++;
    this.#states.delete(soonest[0]);
    this.#states.set(key, { tat, count, group: soonest[1].group, tie });
  }

  admit(charges: readonly Charge[], nowMs: number): ReferenceDecision {
    // A key met twice in one call is one spend of the summed cost.
    const entries = new Map<string, Entry>();
    let retryAfterMs = 0n;
    let denied: ReferenceFigures | null = null;
    charges.forEach((charge, chargeIndex) => {
      if (charge.cost === 0) return;
      for (const limit of charge.limits) {
        const c = BigInt(limit.count);
        const intervalUnits = BigInt(limit.windowMs); // T = W/C ms = windowMs units of 1/C ms
        const toleranceUnits = BigInt(limit.burst) * intervalUnits;
        const t = BigInt(Math.floor(nowMs)) * c;
        const key = keyOf(charge, limit);
        let entry = entries.get(key);
        if (entry === undefined) {
          entry = { chargeIndex, limit, charge, before: this.#tatOf(key), cost: 0n, after: 0n };
          entries.set(key, entry);
        }
        entry.cost += BigInt(charge.cost);
        const n = entry.cost;
        const e = entry.before > t ? entry.before : t;
        const fits = n <= BigInt(limit.burst) ? e + n * intervalUnits - t <= toleranceUnits : e === t;
        entry.after = fits ? e + n * intervalUnits : entry.before;
        if (!fits) {
          const delayUnits = n <= BigInt(limit.burst) ? e + n * intervalUnits - t - toleranceUnits : e - t;
          const delayMs = ceilDiv(delayUnits, c);
          if (delayMs > retryAfterMs) {
            retryAfterMs = delayMs;
            denied = { ...figures(limit, entry.before, t), chargeIndex };
          }
        }
      }
    });
    if (denied !== null) {
      const worst: ReferenceFigures = denied;
      return { allowed: false, retryAfterMs: Number(retryAfterMs), deniedChargeIndex: worst.chargeIndex, tightest: worst };
    }
    let tightest: ReferenceFigures | null = null;
    for (const [key, entry] of entries) {
      this.#store(entry.charge, entry.limit, key, entry.after, nowMs);
      const f = { ...figures(entry.limit, entry.after, BigInt(Math.floor(nowMs)) * BigInt(entry.limit.count)), chargeIndex: entry.chargeIndex };
      if (tightest === null || f.remaining < tightest.remaining || (f.remaining === tightest.remaining && f.resetMs > tightest.resetMs)) tightest = f;
    }
    return { allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest };
  }
}

/** Remaining cost-1 spends and ms until earned back for a state `tat` at time `t` (both ·count). */
function figures(limit: Limit, tat: bigint, t: bigint): Omit<ReferenceFigures, "chargeIndex"> {
  const intervalUnits = BigInt(limit.windowMs);
  const rel = tat > t ? tat - t : 0n;
  const slack = BigInt(limit.burst) * intervalUnits - rel;
  return { limit, remaining: slack <= 0n ? 0 : Number(slack / intervalUnits), resetMs: Number(ceilDiv(rel, BigInt(limit.count))) };
}

/** A decision in plain values, the limit by its figures: what the property tests compare. */
export function comparable(d: ReferenceDecision) {
  const f = d.tightest;
  return {
    allowed: d.allowed,
    retryAfterMs: d.retryAfterMs,
    deniedChargeIndex: d.deniedChargeIndex,
    tightest: f && { chargeIndex: f.chargeIndex, remaining: f.remaining, resetMs: f.resetMs, limit: [f.limit.count, f.limit.windowMs, f.limit.burst] },
  };
}

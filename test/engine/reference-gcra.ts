// A plain reference model of DESIGN §4 for the property test: a Map keyed by
// the real key string, TATs as BigInt in units of 1/count ms (so T = windowMs
// units exactly), no table, no hashing, no eviction. Slow and obviously right.
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

function keyOf(charge: Charge, limit: Limit): string {
  return `${charge.subject}\u0000${charge.category}\u0000${limit.count}/${limit.windowMs}/${limit.burst}`;
}

interface Entry {
  chargeIndex: number;
  limit: Limit;
  /** TAT · count before the call (0n: no state). */
  before: bigint;
  cost: bigint;
  after: bigint;
}

export class ReferenceGcra {
  /** TAT · count, in ms·count (units of 1/count ms). */
  readonly #tat = new Map<string, bigint>();

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
          entry = { chargeIndex, limit, before: this.#tat.get(key) ?? 0n, cost: 0n, after: 0n };
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
      this.#tat.set(key, entry.after);
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

// A plain model of the admission rule plus response-priced settlement (docs/design.md) for the property
// test of response-cost-gcra.ts: a Map keyed by the real key string, TATs as
// BigInt in units of 1/count ms (T = windowMs units), no table, no hashing.
import type { Charge } from "../../src/engine/gcra";
import { MAX_COST, MAX_EXACT_UNITS, type Limit } from "../../src/engine/limit";
import type { SettleCharge } from "../../src/proxy/response-cost-gcra";

export interface ModelFigures {
  chargeIndex: number;
  limit: Limit;
  remaining: number;
  resetMs: number;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return a <= 0n ? -(-a / b) : (a + b - 1n) / b;
}

function keyOf(subject: string, category: string, limit: Limit): string {
  return `${subject}\u0000${category}\u0000${limit.count}/${limit.windowMs}/${limit.burst}`;
}

export class SettleModel {
  readonly #tat = new Map<string, bigint>();

  /** Admission: only whether it fits and the retry delay (the engine's own property test covers the rest). */
  admit(charges: readonly Charge[], nowMs: number): { allowed: boolean; retryAfterMs: number } {
    const totals = new Map<string, { limit: Limit; cost: bigint }>();
    for (const charge of charges) {
      if (charge.cost === 0) continue;
      for (const limit of charge.limits) {
        const key = keyOf(charge.subject, charge.category, limit);
        const entry = totals.get(key) ?? { limit, cost: 0n };
        entry.cost += BigInt(charge.cost);
        totals.set(key, entry);
      }
    }
    let retryAfterMs = 0n;
    const after = new Map<string, bigint>();
    for (const [key, { limit, cost }] of totals) {
      const c = BigInt(limit.count);
      const t = BigInt(Math.floor(nowMs)) * c;
      const tee = BigInt(limit.windowMs);
      const before = this.#tat.get(key) ?? 0n;
      const e = before > t ? before : t;
      const fits = cost <= BigInt(limit.burst) ? e + cost * tee - t <= BigInt(limit.burst) * tee : e === t;
      if (fits) after.set(key, e + cost * tee);
      else {
        const delay = cost <= BigInt(limit.burst) ? e + cost * tee - t - BigInt(limit.burst) * tee : e - t;
        const ms = ceilDiv(delay, c);
        if (ms > retryAfterMs) retryAfterMs = ms;
      }
    }
    if (retryAfterMs > 0n) return { allowed: false, retryAfterMs: Number(retryAfterMs) };
    for (const [key, tat] of after) this.#tat.set(key, tat);
    return { allowed: true, retryAfterMs: 0 };
  }

  debt(settlements: readonly SettleCharge[], nowMs: number): { tightest: ModelFigures | null; retryAfterMs: number } {
    return this.#settle(settlements, nowMs, (rel, units, tee, capRel) => {
      if (units === 0n || rel >= capRel) return rel;
      const next = rel + units * tee;
      return next > capRel ? capRel : next;
    });
  }

  refund(settlements: readonly SettleCharge[], nowMs: number): { tightest: ModelFigures | null; retryAfterMs: number } {
    return this.#settle(settlements, nowMs, (rel, units, tee) => (rel - units * tee > 0n ? rel - units * tee : 0n));
  }

  #settle(settlements: readonly SettleCharge[], nowMs: number, move: (rel: bigint, units: bigint, tee: bigint, capRel: bigint) => bigint) {
    let tightest: ModelFigures | null = null;
    let retryAfterMs = 0n;
    settlements.forEach((settlement, chargeIndex) => {
      for (const limit of settlement.limits) {
        const c = BigInt(limit.count);
        const tee = BigInt(limit.windowMs);
        const t = BigInt(Math.floor(nowMs)) * c;
        // The engine's cap, MAX_EXACT_UNITS − MAX_COST·T in its own units of 1/unitsPerMs ms, here in units of 1/count ms.
        const perEngineUnit = c / BigInt(limit.unitsPerMs);
        const capRel = (BigInt(MAX_EXACT_UNITS) - BigInt(MAX_COST) * BigInt(limit.intervalUnits)) * perEngineUnit;
        const key = keyOf(settlement.subject, settlement.category, limit);
        const before = this.#tat.get(key) ?? 0n;
        const rel = before > t ? before - t : 0n;
        const after = move(rel, BigInt(settlement.units), tee, capRel);
        if (after !== rel) this.#tat.set(key, t + after);
        const slack = BigInt(limit.burst) * tee - after;
        const remaining = slack <= 0n ? 0 : Number(slack / tee);
        const resetMs = Number(ceilDiv(after, c));
        if (tightest === null || remaining < tightest.remaining || (remaining === tightest.remaining && resetMs > tightest.resetMs)) {
          tightest = { chargeIndex, limit, remaining, resetMs };
        }
        const delay = after + tee - BigInt(limit.burst) * tee;
        if (delay > 0n && ceilDiv(delay, c) > retryAfterMs) retryAfterMs = ceilDiv(delay, c);
      }
    });
    return { tightest: tightest as ModelFigures | null, retryAfterMs: Number(retryAfterMs) };
  }
}

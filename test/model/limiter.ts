// Rate limits as the contract states them: exact GCRA per subject and limit,
// one instant TAT each, kept as BigInt in units of 1/count ms so that the
// emission interval T = window/count is a whole number (windowMs units).
// Every spend of a request is admitted all or nothing; a denial charges
// nothing and reports the exact delay; settlements add debt or give back.
import type { LimitSpec } from "./scenario";

export interface ModelLimit {
  count: number;
  windowMs: number;
  burst: number;
}

export function modelLimit(spec: LimitSpec): ModelLimit {
  return { count: spec.count, windowMs: Math.round(spec.window_s * 1000), burst: spec.burst ?? spec.count };
}

/** One spend: `cost` units of `category` charged to `subject` under each of `limits`. */
export interface Spend {
  subject: string;
  /** `key`, `tenant` or `ip`: the policy name's middle word. */
  kind: string;
  category: string;
  limits: readonly ModelLimit[];
  cost: number;
}

export interface Figures {
  /** `<category>-<kind>-<window>`, as RateLimit-Policy names it. */
  policy: string;
  limit: ModelLimit;
  /** Cost-1 spends admitted right now. */
  remaining: number;
  /** Until the limit is fully earned back. */
  resetMs: number;
}

export type Admission =
  | { allowed: true }
  | {
      allowed: false;
      retryAfterMs: number;
      /** The categories whose limits need the longest wait (more than one when they tie). */
      categories: string[];
      violated: string[];
    };

function ceilDiv(a: bigint, b: bigint): bigint {
  return a <= 0n ? -(-a / b) : (a + b - 1n) / b;
}

function windowLabel(limit: ModelLimit): string {
  return limit.windowMs % 1000 === 0 ? `${limit.windowMs / 1000}s` : `${limit.windowMs}ms`;
}

export function policyName(category: string, kind: string, limit: ModelLimit): string {
  return `${category}-${kind}-${windowLabel(limit)}`;
}

function stateKey(subject: string, category: string, limit: ModelLimit): string {
  return `${subject}|${category}|${limit.count}/${limit.windowMs}/${limit.burst}`;
}

interface Total {
  spend: Spend;
  limit: ModelLimit;
  cost: bigint;
}

export class ModelLimiter {
  /** TAT · count (ms·count); absent: earned back. */
  readonly #tat = new Map<string, bigint>();

  #totals(spends: readonly Spend[]): Map<string, Total> {
    const totals = new Map<string, Total>();
    for (const spend of spends) {
      if (spend.cost <= 0) continue;
      for (const limit of spend.limits) {
        const key = stateKey(spend.subject, spend.category, limit);
        const total = totals.get(key) ?? { spend, limit, cost: 0n };
        total.cost += BigInt(spend.cost);
        totals.set(key, total);
      }
    }
    return totals;
  }

  /** Admits every spend or none (a key met twice in one request is one spend of the summed cost). */
  admit(spends: readonly Spend[], nowMs: number): Admission {
    const totals = this.#totals(spends);
    const after = new Map<string, bigint>();
    let worst = -1n;
    let categories: string[] = [];
    const violated: string[] = [];
    for (const [key, { spend, limit, cost }] of totals) {
      const c = BigInt(limit.count);
      const tee = BigInt(limit.windowMs);
      const tolerance = BigInt(limit.burst) * tee;
      const t = BigInt(nowMs) * c;
      const tat = this.#tat.get(key) ?? 0n;
      const e = tat > t ? tat : t;
      const oversize = cost > BigInt(limit.burst);
      const fits = oversize ? e === t : e + cost * tee - t <= tolerance;
      if (fits) {
        after.set(key, e + cost * tee);
        continue;
      }
      violated.push(policyName(spend.category, spend.kind, limit));
      const delay = ceilDiv(oversize ? e - t : e + cost * tee - t - tolerance, c);
      if (delay > worst) {
        worst = delay;
        categories = [spend.category];
      } else if (delay === worst && !categories.includes(spend.category)) categories.push(spend.category);
    }
    if (worst >= 0n) return { allowed: false, retryAfterMs: Number(worst), categories, violated };
    for (const [key, tat] of after) this.#tat.set(key, tat);
    return { allowed: true };
  }

  /** Charges `spends` unconditionally (a priced cost above its reserve: the caller then waits it out). */
  debt(spends: readonly Spend[], nowMs: number): void {
    for (const [key, { limit, cost }] of this.#totals(spends)) {
      const t = BigInt(nowMs) * BigInt(limit.count);
      const tat = this.#tat.get(key) ?? 0n;
      this.#tat.set(key, (tat > t ? tat : t) + cost * BigInt(limit.windowMs));
    }
  }

  /** Gives `spends` back, never earlier than now. */
  refund(spends: readonly Spend[], nowMs: number): void {
    for (const [key, { limit, cost }] of this.#totals(spends)) {
      const t = BigInt(nowMs) * BigInt(limit.count);
      const tat = this.#tat.get(key);
      if (tat === undefined || tat <= t) continue;
      const back = tat - cost * BigInt(limit.windowMs);
      this.#tat.set(key, back > t ? back : t);
    }
  }

  /** A limit's standing for a subject now: what explain and the RateLimit header report. */
  figures(subject: string, category: string, kind: string, limit: ModelLimit, nowMs: number): Figures {
    const c = BigInt(limit.count);
    const tee = BigInt(limit.windowMs);
    const t = BigInt(nowMs) * c;
    const tat = this.#tat.get(stateKey(subject, category, limit)) ?? 0n;
    const rel = tat > t ? tat - t : 0n;
    const slack = BigInt(limit.burst) * tee - rel;
    return {
      policy: policyName(category, kind, limit),
      limit,
      remaining: slack <= 0n ? 0 : Number(slack / tee),
      resetMs: Number(ceilDiv(rel, c)),
    };
  }
}

// Rate limits as the contract states them: exact GCRA per subject and limit,
// one instant TAT each, kept as BigInt in units of 1/count ms so that the
// emission interval T = window/count is a whole number (windowMs units).
// Every spend of a request is admitted all or nothing; a denial charges
// nothing and reports the exact delay; settlements add debt or give back.
// A shadow limit (per-policy shadow) takes no part in that decision: once
// the enforced limits admit a request, each shadow limit is decided on its
// own (the request's spends under it summed), charged when they fit and
// charged nothing when it would have refused. Its state is the one the same
// limit enforced would keep (switching shadow off enforces from it).
import type { LimitSpec } from "./scenario";

export interface ModelLimit {
  count: number;
  windowMs: number;
  burst: number;
  shadow: boolean;
}

export function modelLimit(spec: LimitSpec): ModelLimit {
  return { count: spec.count, windowMs: Math.round(spec.window_s * 1000), burst: spec.burst ?? spec.count, shadow: spec.shadow === true };
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

  #totals(spends: readonly Spend[], which: "all" | "enforced" = "all"): Map<string, Total> {
    const totals = new Map<string, Total>();
    for (const spend of spends) {
      if (spend.cost <= 0) continue;
      for (const limit of spend.limits) {
        if (which === "enforced" && limit.shadow) continue;
        const key = stateKey(spend.subject, spend.category, limit);
        const total = totals.get(key) ?? { spend, limit, cost: 0n };
        total.cost += BigInt(spend.cost);
        totals.set(key, total);
      }
    }
    return totals;
  }

  /** Admits every spend or none under the enforced limits (a key met twice in one request is one spend of the summed cost). */
  admit(spends: readonly Spend[], nowMs: number): Admission {
    return this.#admit(this.#totals(spends, "enforced"), nowMs);
  }

  /**
   * Decides each shadow limit of an admitted request's spends on its own:
   * charged when the request's spends under it fit, else charged nothing.
   * Answers the spends as charged (a shadow limit that would have refused
   * left out of them) and the policies of those that would have refused.
   */
  decideShadow(spends: readonly Spend[], nowMs: number): { charged: Spend[]; refused: string[] } {
    const refusedKeys = new Set<string>();
    const refused: string[] = [];
    for (const [key, total] of this.#totals(spends)) {
      if (!total.limit.shadow) continue;
      if (this.#admit(new Map([[key, total]]), nowMs).allowed) continue;
      refusedKeys.add(key);
      const name = policyName(total.spend.category, total.spend.kind, total.limit);
      if (!refused.includes(name)) refused.push(name);
    }
    const charged = spends.map((s) => {
      const kept = s.limits.filter((l) => !(l.shadow && refusedKeys.has(stateKey(s.subject, s.category, l))));
      return kept.length === s.limits.length ? s : { ...s, limits: kept };
    });
    return { charged, refused };
  }

  #admit(totals: Map<string, Total>, nowMs: number): Admission {
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

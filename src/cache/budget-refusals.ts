// What this isolate knows of budgets that said no, so that a spent or failing
// budget cannot be made to flood its object. Every budgeted request goes to
// its owner's quota object, and one object serialises every budgeted request
// of a tenant (and its org): a key whose budget is spent, sending as fast as
// it can, would otherwise cost one object call per request, since a budget
// refusal gives the rate-limit charge back and no rate limit stops it.
//
// - A budget that refused (budget_exhausted, credits_exhausted) is kept with
//   its figures until the period resets or for `budgets.exhausted_cache_s`,
//   whichever comes first; meanwhile a spend that would not fit those figures
//   is refused here, with no object call. A spend that would fit (a smaller
//   one) still asks the object, which stays the only judge of an admission:
//   the cache can only refuse what the object refused, never admit. A top-up
//   or a PUT elsewhere reaches this isolate within the cache's life; an admin
//   write through this isolate forgets the owner's entries at once.
// - An object that failed is not asked again by this isolate for
//   OBJECT_BACKOFF_MS (503 budget_unavailable meanwhile).
//
// Bounded: at most `maxEntries` of each; a new entry past that drops the
// oldest (entries live seconds, so the oldest is the nearest to expiring).
import type { BudgetSpend, BudgetState } from "../durable/budget-types";

/** How long an isolate leaves a quota object alone after it failed to answer a budget call. */
export const OBJECT_BACKOFF_MS = 1000;

interface Refused {
  readonly state: BudgetState;
  readonly untilMs: number;
}

function keyOf(owner: string, category: string): string {
  return `${owner}\n${category}`;
}

/** Whether a spend of `units` fits `state`'s figures (a spend of 0, a zero reserve, fits only while something is left). */
export function spendFits(state: Pick<BudgetState, "used" | "amount">, units: number): boolean {
  return units > 0 ? state.used + units <= state.amount : state.used < state.amount;
}

export class BudgetRefusals {
  readonly #exhaustedCacheMs: number;
  readonly #maxEntries: number;
  readonly #refused = new Map<string, Refused>();
  /** Object name (`tenant:<slug>`, `org:<slug>`) → until when it is not asked. */
  readonly #down = new Map<string, number>();

  constructor(exhaustedCacheMs: number, maxEntries: number) {
    this.#exhaustedCacheMs = exhaustedCacheMs;
    this.#maxEntries = Math.max(1, maxEntries);
  }

  /** The budget that refused a spend like one of `spends` lately and would refuse it again by its figures, or null. */
  refusing(spends: readonly BudgetSpend[], nowMs: number): BudgetState | null {
    if (this.#refused.size === 0) return null;
    for (const s of spends) {
      const key = keyOf(s.owner, s.category);
      const entry = this.#refused.get(key);
      if (entry === undefined) continue;
      if (nowMs >= entry.untilMs) {
        this.#refused.delete(key);
        continue;
      }
      if (!spendFits(entry.state, s.units)) return entry.state;
    }
    return null;
  }

  /** Records a budget's refusal, kept until its period resets or the cache's life ends. */
  noteRefused(state: BudgetState, nowMs: number): void {
    if (this.#exhaustedCacheMs <= 0) return;
    const untilMs = Math.min(nowMs + this.#exhaustedCacheMs, state.resetsAtMs ?? Number.POSITIVE_INFINITY);
    if (untilMs <= nowMs) return;
    const key = keyOf(state.owner, state.category);
    this.#refused.delete(key);
    evictOldest(this.#refused, this.#maxEntries);
    this.#refused.set(key, { state, untilMs });
  }

  /** Whether `object` failed lately and is not to be asked yet. */
  isDown(object: string, nowMs: number): boolean {
    if (this.#down.size === 0) return false;
    const untilMs = this.#down.get(object);
    if (untilMs === undefined) return false;
    if (nowMs < untilMs) return true;
    this.#down.delete(object);
    return false;
  }

  /** Records that `object` failed to answer: not asked again for OBJECT_BACKOFF_MS. */
  noteDown(object: string, nowMs: number): void {
    this.#down.delete(object);
    evictOldest(this.#down, this.#maxEntries);
    this.#down.set(object, nowMs + OBJECT_BACKOFF_MS);
  }

  /** Forgets every refusal of `owner`'s budgets (an admin wrote one of them through this isolate). */
  forgetOwner(owner: string): void {
    const prefix = `${owner}\n`;
    for (const key of this.#refused.keys()) if (key.startsWith(prefix)) this.#refused.delete(key);
  }
}

function evictOldest<V>(map: Map<string, V>, max: number): void {
  while (map.size >= max) {
    const oldest = map.keys().next();
    if (oldest.done === true) return;
    map.delete(oldest.value);
  }
}

// Budgets as the contract states them: a calendar-period cap per owner and
// category (day, month, all UTC; `none` for credits that never reset),
// reserved all or nothing before the forward and settled after the answer
// (debt above the reserve, refund below it). A spent budget refuses even a
// spend of 0 (a zero reserve is still budgeted). After a refusal the
// isolate refuses that budget on its own, without asking, until the period
// resets or for `exhausted_cache_s`, whichever comes first: a spend that
// would not fit the figures it was refused with (a smaller one that would
// still asks, as docs/budgets.md has it); an operator's write through the
// isolate (a top-up) forgets it at once.
//
// A shadow budget (per-policy shadow) is spent from like any other while it
// has room; a spend it cannot take is not refused and not charged to it (the
// request goes on, marked), and the isolate remembers that as it remembers a
// refusal. Shadow mode's forced reserve charges it like the others.
import type { BudgetSpec } from "./scenario";

export const DEFAULT_EXHAUSTED_CACHE_MS = 5000;
const DAY_MS = 86_400_000;

/** When the period holding `nowMs` ends (Unix ms), or null for credits. */
export function periodEndMs(period: BudgetSpec["period"], nowMs: number): number | null {
  if (period === "none") return null;
  if (period === "day") return (Math.floor(nowMs / DAY_MS) + 1) * DAY_MS;
  const d = new Date(nowMs);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

export interface ModelBudget {
  readonly id: string;
  readonly owner: string;
  readonly category: string;
  amount: number;
  readonly period: BudgetSpec["period"];
  used: number;
  /** End of the period `used` belongs to. */
  endsAtMs: number | null;
  /** This isolate refuses the budget without asking until then (its last refusal). */
  refusedUntilMs: number;
  /** The figures of that refusal: a spend that would fit them still asks. */
  refusedWith: { used: number; amount: number };
  /** Per-policy shadow: never refuses. */
  readonly shadow: boolean;
}

export type BudgetRefusal = { code: "budget_exhausted" | "credits_exhausted"; retryAfterS: number | null; budget: ModelBudget; used: number; amount: number };

/** Whether a spend of `units` fits a budget's figures (a spend of 0 fits while something is left). */
function fits(figures: { used: number; amount: number }, units: number): boolean {
  return units === 0 ? figures.used < figures.amount : figures.used + units <= figures.amount;
}

export class ModelBudgets {
  readonly all: ModelBudget[] = [];

  add(id: string, owner: string, spec: BudgetSpec, nowMs: number): void {
    this.all.push({ id, owner, category: spec.category, amount: spec.amount, period: spec.period, used: 0, endsAtMs: periodEndMs(spec.period, nowMs), refusedUntilMs: -Infinity, refusedWith: { used: 0, amount: 0 }, shadow: spec.shadow === true });
  }

  #roll(b: ModelBudget, nowMs: number): void {
    if (b.endsAtMs !== null && nowMs >= b.endsAtMs) {
      b.used = 0;
      b.endsAtMs = periodEndMs(b.period, nowMs);
    }
  }

  /** The budgets of `category` that apply to `owners`. */
  applying(owners: readonly string[], category: string): ModelBudget[] {
    return this.all.filter((b) => b.category === category && owners.includes(b.owner));
  }

  #refusal(b: ModelBudget, nowMs: number): BudgetRefusal {
    const figures = { budget: b, used: b.used, amount: b.amount };
    return b.period === "none"
      ? { code: "credits_exhausted", retryAfterS: null, ...figures }
      : { code: "budget_exhausted", retryAfterS: Math.ceil((b.endsAtMs! - nowMs) / 1000), ...figures };
  }

  /** Refusals this isolate makes on its own, without asking: spends that would not fit a budget it remembers refusing. */
  cachedRefusals(spends: readonly { budget: ModelBudget; units: number }[], nowMs: number): BudgetRefusal[] {
    return spends
      .filter(({ budget, units }) => nowMs < budget.refusedUntilMs && (budget.endsAtMs === null || nowMs < budget.endsAtMs) && !fits(budget.refusedWith, units))
      .map(({ budget }) => this.#refusal(budget, nowMs));
  }

  /**
   * Reserves every spend or none at the owners' objects; `forced` (shadow
   * mode) records them all the same. Returns the refusals of the enforced
   * budgets (empty: reserved) and the shadow budgets that could not take
   * their spend: passed (not charged) unless forced, when they are charged
   * like the others.
   */
  reserve(spends: readonly { budget: ModelBudget; units: number }[], nowMs: number, forced: boolean): { refusals: BudgetRefusal[]; shadows: BudgetRefusal[] } {
    const refusals: BudgetRefusal[] = [];
    const shadows: BudgetRefusal[] = [];
    for (const { budget, units } of spends) {
      this.#roll(budget, nowMs);
      if (!fits(budget, units)) (budget.shadow ? shadows : refusals).push(this.#refusal(budget, nowMs));
    }
    if (refusals.length === 0 || forced) {
      for (const { budget, units } of spends) if (forced || !shadows.some((r) => r.budget === budget)) budget.used += units;
    }
    return { refusals, shadows };
  }

  /**
   * Adds to the `index`-th budget of credits (counted round); nothing when
   * there is none. Written through this isolate (`here`), it also forgets
   * this isolate's refusals of the owner's budgets; written through another,
   * this one refuses them on its own until its memory of them ends.
   */
  topUp(index: number, units: number, here: boolean): void {
    const credits = this.all.filter((b) => b.period === "none");
    if (credits.length === 0) return;
    const budget = credits[index % credits.length]!;
    budget.amount += units;
    if (here) for (const b of this.all) if (b.owner === budget.owner) b.refusedUntilMs = -Infinity;
  }

  /** Remembers a refusal for `cacheMs`, for the budgets that refused. */
  remember(refusals: readonly BudgetRefusal[], nowMs: number, cacheMs: number): void {
    for (const r of refusals) {
      r.budget.refusedUntilMs = nowMs + cacheMs;
      r.budget.refusedWith = { used: r.used, amount: r.amount };
    }
  }

  /** Settles `units` more (debt, unconditional) or fewer (a refund) on a budget reserved at `reservedEndsAtMs`. */
  settle(budget: ModelBudget, units: number, reservedEndsAtMs: number | null, nowMs: number): void {
    this.#roll(budget, nowMs);
    // A settlement of a reservation made in an earlier period changes nothing of this one's.
    if (budget.endsAtMs !== reservedEndsAtMs) return;
    budget.used = Math.max(0, budget.used + units);
  }

  usedNow(budget: ModelBudget, nowMs: number): number {
    this.#roll(budget, nowMs);
    return budget.used;
  }
}

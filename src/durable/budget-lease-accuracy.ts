// What a quota object counts of its budgets' leases for GET /global/accuracy:
// per budget and minute, the leases granted and their units, the requests it
// refused, and those it refused while other isolates held units of that
// budget in live leases (the price of leasing: a refusal a single exact
// counter would not have made, for as long as those units sit elsewhere).
// Kept in memory, since the object started, the last COUNT_MINUTES minutes
// of at most MAX_BUDGETS_COUNTED budgets: an object busy enough to matter
// stays in memory, and one evicted starts counting again (the report says
// since when).
import { minuteOf } from "./ledger-accuracy";

export const COUNT_MINUTES = 60;
const MAX_BUDGETS_COUNTED = 256;

interface Minute {
  readonly minuteMs: number;
  grants: number;
  grantedUnits: number;
  refused: number;
  refusedWhileLeased: number;
}

/** One budget's counts over the minutes asked about. */
export interface BudgetLeaseCounts {
  readonly owner: string;
  readonly category: string;
  readonly grants: number;
  readonly grantedUnits: number;
  readonly refused: number;
  readonly refusedWhileLeased: number;
}

/** One budget as GET /global/accuracy reports it: its counts, and its figures now. */
export interface BudgetLeaseAccuracy extends BudgetLeaseCounts {
  readonly period: string;
  readonly amount: number;
  readonly used: number;
  /** Units in live leases not reported spent. */
  readonly leased: number;
}

export interface BudgetLeaseAccuracyReport {
  readonly budgets: BudgetLeaseAccuracy[];
  /** When this object began counting (it counts in memory): minutes before it are not in the figures. */
  readonly countingSinceMs: number;
}

export class BudgetLeaseCounter {
  readonly #budgets = new Map<string, { owner: string; category: string; minutes: Minute[] }>();
  readonly startedAtMs: number;

  constructor(startedAtMs: number) {
    this.startedAtMs = startedAtMs;
  }

  granted(owner: string, category: string, units: number, nowMs: number): void {
    const m = this.#minute(owner, category, nowMs);
    m.grants++;
    m.grantedUnits += units;
  }

  refused(owner: string, category: string, whileLeased: boolean, nowMs: number): void {
    const m = this.#minute(owner, category, nowMs);
    m.refused++;
    if (whileLeased) m.refusedWhileLeased++;
  }

  /** Each budget's counts over the minutes that start at or after `sinceMs`, budgets with none left out. */
  since(sinceMs: number): BudgetLeaseCounts[] {
    const out: BudgetLeaseCounts[] = [];
    for (const { owner, category, minutes } of this.#budgets.values()) {
      const sum = { owner, category, grants: 0, grantedUnits: 0, refused: 0, refusedWhileLeased: 0 };
      for (const m of minutes) {
        if (m.minuteMs < sinceMs) continue;
        sum.grants += m.grants;
        sum.grantedUnits += m.grantedUnits;
        sum.refused += m.refused;
        sum.refusedWhileLeased += m.refusedWhileLeased;
      }
      if (sum.grants + sum.refused > 0) out.push(sum);
    }
    return out;
  }

  #minute(owner: string, category: string, nowMs: number): Minute {
    const key = `${owner}\u0000${category}`;
    let entry = this.#budgets.get(key);
    if (entry === undefined) {
      // The budget counted least recently goes (a Map keeps insertion order; a touched budget is moved to the end below).
      if (this.#budgets.size >= MAX_BUDGETS_COUNTED) this.#budgets.delete(this.#budgets.keys().next().value!);
      entry = { owner, category, minutes: [] };
    } else {
      this.#budgets.delete(key);
    }
    this.#budgets.set(key, entry);
    const minuteMs = minuteOf(nowMs);
    const minutes = entry.minutes;
    let last = minutes[minutes.length - 1];
    if (last === undefined || last.minuteMs < minuteMs) {
      last = { minuteMs, grants: 0, grantedUnits: 0, refused: 0, refusedWhileLeased: 0 };
      minutes.push(last);
      if (minutes.length > COUNT_MINUTES) minutes.shift();
      return last;
    }
    // A call stamped with an earlier minute (an isolate's clock behind): counted in the latest one.
    return last;
  }
}

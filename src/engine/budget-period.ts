// Calendar periods of a budget, in UTC: when the period holding an instant
// began and when it resets. Pure: time comes in as `nowMs` (Unix ms).
//
// - day: 00:00 UTC each day;
// - week: Monday 00:00 UTC;
// - month: the 1st, 00:00 UTC;
// - none: prepaid credits, never reset (the period starts at 0 and has no end).

export const BUDGET_PERIODS = ["day", "week", "month", "none"] as const;
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

const DAY_MS = 86_400_000;
/** 1970-01-01 was a Thursday: days since the epoch plus this, mod 7, is 0 on Mondays. */
const MONDAY_OFFSET_DAYS = 3;

export function isBudgetPeriod(value: unknown): value is BudgetPeriod {
  return typeof value === "string" && (BUDGET_PERIODS as readonly string[]).includes(value);
}

/** Unix ms at which the period holding `nowMs` began; 0 for `none`. */
export function periodStartMs(period: BudgetPeriod, nowMs: number): number {
  const t = Math.floor(nowMs);
  switch (period) {
    case "none":
      return 0;
    case "day":
      return Math.floor(t / DAY_MS) * DAY_MS;
    case "week": {
      const days = Math.floor(t / DAY_MS);
      const sinceMonday = (((days + MONDAY_OFFSET_DAYS) % 7) + 7) % 7;
      return (days - sinceMonday) * DAY_MS;
    }
    case "month": {
      const d = new Date(t);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
  }
}

/** Unix ms at which the period that began at `startMs` resets (the next one begins); null for `none`. */
export function periodEndMs(period: BudgetPeriod, startMs: number): number | null {
  switch (period) {
    case "none":
      return null;
    case "day":
      return startMs + DAY_MS;
    case "week":
      return startMs + 7 * DAY_MS;
    case "month": {
      const d = new Date(startMs);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
    }
  }
}

/**
 * The period a spend at `nowMs` counts in, given the one a budget is in now:
 * a later period once the clock has passed the reset, else the current one
 * (an isolate whose clock is a little behind never moves a budget back).
 */
export function currentPeriodStartMs(period: BudgetPeriod, storedStartMs: number, nowMs: number): number {
  const start = periodStartMs(period, nowMs);
  return start > storedStartMs ? start : storedStartMs;
}

/** Thresholds crossed at `used` of `amount`, as a bit per index of the ascending `thresholds`. */
export function crossedMask(thresholds: readonly number[], used: number, amount: number): number {
  let mask = 0;
  for (let i = 0; i < thresholds.length; i++) {
    // used >= t·amount; with amount 0 every threshold counts as crossed by any spend.
    if (used > 0 && used >= thresholds[i]! * amount) mask |= 1 << i;
  }
  return mask;
}

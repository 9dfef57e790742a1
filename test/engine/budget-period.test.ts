import { describe, expect, it } from "vitest";
import { crossedMask, currentPeriodStartMs, periodEndMs, periodStartMs } from "../../src/engine/budget-period";

const at = (iso: string) => Date.parse(iso);

describe("budget periods", () => {
  it.each([
    ["day", "2026-03-15T13:45:10.123Z", "2026-03-15T00:00:00.000Z", "2026-03-16T00:00:00.000Z"],
    ["day", "2026-03-15T00:00:00.000Z", "2026-03-15T00:00:00.000Z", "2026-03-16T00:00:00.000Z"],
    ["week", "2026-03-15T13:45:10.123Z", "2026-03-09T00:00:00.000Z", "2026-03-16T00:00:00.000Z"], // a Sunday
    ["week", "2026-03-16T00:00:00.000Z", "2026-03-16T00:00:00.000Z", "2026-03-23T00:00:00.000Z"], // a Monday
    ["week", "1970-01-01T12:00:00.000Z", "1969-12-29T00:00:00.000Z", "1970-01-05T00:00:00.000Z"],
    ["month", "2026-02-28T23:59:59.999Z", "2026-02-01T00:00:00.000Z", "2026-03-01T00:00:00.000Z"],
    ["month", "2026-12-31T23:59:59.999Z", "2026-12-01T00:00:00.000Z", "2027-01-01T00:00:00.000Z"],
    ["month", "2028-02-29T10:00:00.000Z", "2028-02-01T00:00:00.000Z", "2028-03-01T00:00:00.000Z"],
  ] as const)("starts a %s holding %s at %s and resets it at %s", (period, now, start, end) => {
    const s = periodStartMs(period, at(now));
    expect(new Date(s).toISOString()).toBe(start);
    expect(new Date(periodEndMs(period, s)!).toISOString()).toBe(end);
  });

  it("gives credits one period from 0 that never resets", () => {
    expect(periodStartMs("none", at("2026-03-15T13:45:10Z"))).toBe(0);
    expect(periodEndMs("none", 0)).toBeNull();
  });

  it("moves to the next period 1 ms after the last one ends, and never back for a clock behind", () => {
    const march = at("2026-03-01T00:00:00Z");
    expect(currentPeriodStartMs("month", at("2026-02-01T00:00:00Z"), march - 1)).toBe(at("2026-02-01T00:00:00Z"));
    expect(currentPeriodStartMs("month", at("2026-02-01T00:00:00Z"), march)).toBe(march);
    expect(currentPeriodStartMs("month", march, march - 5)).toBe(march);
  });

  it("marks the thresholds crossed, each by its index", () => {
    expect(crossedMask([0.8, 1], 0, 10)).toBe(0);
    expect(crossedMask([0.8, 1], 7, 10)).toBe(0);
    expect(crossedMask([0.8, 1], 8, 10)).toBe(1);
    expect(crossedMask([0.8, 1], 10, 10)).toBe(3);
    // A budget of 0: any spend crosses every threshold; nothing spent crosses none.
    expect(crossedMask([0.8, 1], 0, 0)).toBe(0);
    expect(crossedMask([0.8, 1], 1, 0)).toBe(3);
    expect(crossedMask([0.8, 1], 12, 10)).toBe(3);
  });
});

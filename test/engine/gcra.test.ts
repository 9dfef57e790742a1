import { describe, expect, it } from "vitest";
import { admit, type Charge, type Decision } from "../../src/engine/gcra";
import { compileLimits, type LimitSpec } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";

// One table per test, seeded, so a test's keys cannot meet another test's.
function table(): LimiterTable {
  return new LimiterTable(1, { seed: 7 });
}

function charge(subject: string, specs: LimitSpec[], cost = 1, category = "request"): Charge {
  return { subject, category, limits: compileLimits(specs), cost };
}

/** Runs [nowMs, cost, expected allowed, expected retryAfterMs] steps for one subject against one limit list. */
function runSteps(specs: LimitSpec[], steps: readonly (readonly [nowMs: number, cost: number, allowed: boolean, retryAfterMs: number])[]): void {
  const tbl = table();
  const limits = compileLimits(specs);
  steps.forEach(([nowMs, cost, allowed, retryAfterMs], i) => {
    const d = admit(tbl, [{ subject: "ip:203.0.113.7", category: "request", limits, cost }], nowMs);
    expect({ step: i, nowMs, allowed: d.allowed, retryAfterMs: d.retryAfterMs }).toEqual({ step: i, nowMs, allowed, retryAfterMs });
  });
}

const FIVE_PER_5S = [{ count: 5, window_s: 5 }];

describe("admit: one limit", () => {
  it("admits five at t = 0, denies the sixth with a delay of 1000 ms, denies at t = 999 and admits at t = 1000", () => {
    runSteps(FIVE_PER_5S, [
      [0, 1, true, 0],
      [0, 1, true, 0],
      [0, 1, true, 0],
      [0, 1, true, 0],
      [0, 1, true, 0],
      [0, 1, false, 1000],
      [999, 1, false, 1],
      [1000, 1, true, 0],
      [1000, 1, false, 1000],
    ]);
  });

  it("leaves the delay of the first denial unchanged after 20 denied spends in a row", () => {
    const steps: [number, number, boolean, number][] = [];
    for (let i = 0; i < 5; i++) steps.push([0, 1, true, 0]);
    for (let i = 0; i < 20; i++) steps.push([0, 1, false, 1000]);
    steps.push([1000, 1, true, 0]);
    runSteps(FIVE_PER_5S, steps);
  });

  it("admits three more at t = 3200 after a partial refill and denies the fourth with a delay of 800 ms", () => {
    runSteps(FIVE_PER_5S, [
      ...Array.from({ length: 5 }, () => [0, 1, true, 0] as const),
      [3200, 1, true, 0],
      [3200, 1, true, 0],
      [3200, 1, true, 0],
      [3200, 1, false, 800],
    ]);
  });

  it("does not accumulate past the burst after a long idle", () => {
    runSteps(FIVE_PER_5S, [
      [0, 1, true, 0],
      ...Array.from({ length: 5 }, () => [86_400_000, 1, true, 0] as const),
      [86_400_000, 1, false, 1000],
    ]);
  });

  it("denies a cost-3 spend after a cost-3 spend with burst 5, charges it nothing, and then admits a cost-2 spend", () => {
    runSteps(FIVE_PER_5S, [
      [0, 3, true, 0],
      [0, 3, false, 1000],
      [0, 2, true, 0],
      [0, 1, false, 1000],
    ]);
  });

  it("admits an oversize spend whole when everything is earned back, then waits until it is earned back", () => {
    runSteps(FIVE_PER_5S, [
      [0, 8, true, 0],
      [0, 1, false, 4000],
      [100, 8, false, 7900],
      [7999, 8, false, 1],
      [8000, 8, true, 0],
    ]);
  });

  it("denies an oversize spend while anything before it is not earned back, with the delay until it is", () => {
    runSteps(FIVE_PER_5S, [
      [0, 1, true, 0],
      [0, 6, false, 1000],
      [999, 6, false, 1],
      [1000, 6, true, 0],
    ]);
  });

  it("meters sub-second windows: 2 per 0.1 s denies the third with a delay of 50 ms", () => {
    runSteps([{ count: 2, window_s: 0.1 }], [
      [0, 1, true, 0],
      [0, 1, true, 0],
      [0, 1, false, 50],
      [49, 1, false, 1],
      [50, 1, true, 0],
      [50, 1, false, 50],
    ]);
  });

  it("gives exact delays for a fractional interval (3 per 1000 ms, T = 333⅓ ms)", () => {
    runSteps([{ count: 3, window_s: 1 }], [
      [0, 1, true, 0],
      [0, 1, true, 0],
      [0, 1, true, 0],
      [0, 1, false, 334],
      [333, 1, false, 1],
      [334, 1, true, 0],
      [334, 1, false, 333],
      [666, 1, false, 1],
      [667, 1, true, 0],
      [667, 1, false, 333],
      [1000, 1, true, 0],
    ]);
  });

  it("does not drift over 3000 spends at T = 333⅓ ms: each is denied 1 ms before ceil(k·1000/3) and admitted at it", () => {
    const tbl = table();
    const limits = compileLimits([{ count: 3, window_s: 1 }]);
    const spend = (nowMs: number) => admit(tbl, [{ subject: "ip:198.51.100.1", category: "request", limits, cost: 1 }], nowMs);
    for (let i = 0; i < 3; i++) expect(spend(0).allowed).toBe(true);
    for (let k = 1; k <= 3000; k++) {
      const dueMs = Math.ceil((k * 1000) / 3);
      const early = spend(dueMs - 1);
      expect([k, early.allowed, early.retryAfterMs]).toEqual([k, false, 1]);
      expect([k, spend(dueMs).allowed]).toEqual([k, true]);
    }
  });

  it("always admits a cost-0 spend and charges nothing", () => {
    runSteps(FIVE_PER_5S, [
      ...Array.from({ length: 5 }, () => [0, 1, true, 0] as const),
      [0, 0, true, 0],
      [0, 1, false, 1000],
    ]);
  });

  it("admits everything under an empty limit list, reporting no figures", () => {
    const d = admit(table(), [charge("anonymous", [], 1000)], 0);
    expect(d).toEqual({ allowed: true, retryAfterMs: 0, deniedChargeIndex: -1, tightest: null });
  });

  it("starts a changed limit from fresh state", () => {
    const tbl = table();
    for (let i = 0; i < 5; i++) admit(tbl, [charge("ip:192.0.2.1", FIVE_PER_5S)], 0);
    expect(admit(tbl, [charge("ip:192.0.2.1", FIVE_PER_5S)], 0).allowed).toBe(false);
    expect(admit(tbl, [charge("ip:192.0.2.1", [{ count: 6, window_s: 5 }])], 0).allowed).toBe(true);
  });

  it("throws on a cost that is not a whole number (a caller bug, not a decision)", () => {
    expect(() => admit(table(), [charge("anonymous", FIVE_PER_5S, 1.5)], 0)).toThrow(RangeError);
    expect(() => admit(table(), [charge("anonymous", FIVE_PER_5S, -1)], 0)).toThrow(RangeError);
  });
});

describe("admit: several limits and subjects", () => {
  it("applies two windows at once (3 per 1 s and 4 per hour)", () => {
    runSteps(
      [
        { count: 3, window_s: 1 },
        { count: 4, window_s: 3600 },
      ],
      [
        [0, 1, true, 0],
        [0, 1, true, 0],
        [0, 1, true, 0],
        [0, 1, false, 334],
        [333, 1, false, 1],
        [334, 1, true, 0],
        [5000, 1, false, 895_000],
        [899_999, 1, false, 1],
        [900_000, 1, true, 0],
      ],
    );
  });

  it("reports the hour limit as the denying one when it has the larger delay", () => {
    const tbl = table();
    const c = charge("key:aa", [
      { count: 3, window_s: 1 },
      { count: 4, window_s: 3600 },
    ]);
    for (let i = 0; i < 4; i++) admit(tbl, [c], i * 1000);
    const d = admit(tbl, [c], 4000);
    expect(d.allowed).toBe(false);
    expect(d.deniedChargeIndex).toBe(0);
    expect(d.tightest?.limit.windowS).toBe(3600);
    expect(d.retryAfterMs).toBe(896_000);
  });

  it("leaves the other subject's state untouched when one subject denies", () => {
    const tbl = table();
    const roomy = charge("ip:192.0.2.10", FIVE_PER_5S);
    const tight = charge("anonymous", [{ count: 1, window_s: 5 }]);
    expect(admit(tbl, [roomy, tight], 0).allowed).toBe(true);
    const denied = admit(tbl, [roomy, tight], 0);
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 5000, deniedChargeIndex: 1 });
    // roomy spent exactly one so far: four more fit alone, the fifth does not.
    for (let i = 0; i < 4; i++) expect(admit(tbl, [roomy], 0).allowed).toBe(true);
    expect(admit(tbl, [roomy], 0)).toMatchObject({ allowed: false, retryAfterMs: 1000 });
  });

  it("charges no category of the request when one category denies", () => {
    const tbl = table();
    const request = charge("key:bb", FIVE_PER_5S, 1, "request");
    const upload = charge("key:bb", [{ count: 1, window_s: 10 }], 1, "upload");
    expect(admit(tbl, [request, upload], 0).allowed).toBe(true);
    expect(admit(tbl, [request, upload], 0)).toMatchObject({ allowed: false, deniedChargeIndex: 1, retryAfterMs: 10_000 });
    for (let i = 0; i < 4; i++) expect(admit(tbl, [request], 0).allowed).toBe(true);
  });

  it("decides a request of 40 charges (a route of many categories over several subjects) on every one of them", () => {
    const tbl = table();
    const charges = Array.from({ length: 40 }, (_, i) => charge("key:many", [{ count: 1, window_s: 60 }], 1, `c${i}`));
    // The last category alone is spent: the request, all or nothing, is refused by it and charges none of the others.
    expect(admit(tbl, [charges[39]!], 0).allowed).toBe(true);
    expect(admit(tbl, charges, 0)).toMatchObject({ allowed: false, deniedChargeIndex: 39, retryAfterMs: 60_000 });
    expect(admit(tbl, charges.slice(0, 39), 0).allowed).toBe(true);
    expect(admit(tbl, charges.slice(0, 39), 0)).toMatchObject({ allowed: false, retryAfterMs: 60_000 });
  });

  it("keeps each category's state apart for the same subject", () => {
    const tbl = table();
    for (let i = 0; i < 5; i++) admit(tbl, [charge("tenant:acme", FIVE_PER_5S, 1, "request")], 0);
    expect(admit(tbl, [charge("tenant:acme", FIVE_PER_5S, 1, "request")], 0).allowed).toBe(false);
    expect(admit(tbl, [charge("tenant:acme", FIVE_PER_5S, 1, "search")], 0).allowed).toBe(true);
  });
});

describe("admit: header figures", () => {
  const figures = (d: Decision) => d.tightest && { chargeIndex: d.tightest.chargeIndex, remaining: d.tightest.remaining, resetMs: d.tightest.resetMs };

  it("reports remaining spends and the time until fully earned back after each decision", () => {
    const tbl = table();
    const c = charge("ip:203.0.113.9", FIVE_PER_5S);
    expect(figures(admit(tbl, [c], 0))).toEqual({ chargeIndex: 0, remaining: 4, resetMs: 1000 });
    for (let i = 0; i < 4; i++) admit(tbl, [c], 0);
    expect(figures(admit(tbl, [c], 0))).toEqual({ chargeIndex: 0, remaining: 0, resetMs: 5000 });
    expect(figures(admit(tbl, [c], 2500))).toEqual({ chargeIndex: 0, remaining: 1, resetMs: 3500 });
  });

  it("reports the limit with the least remaining when allowed", () => {
    const tbl = table();
    const key = charge("key:cc", [{ count: 100, window_s: 1 }]);
    const tenant = charge("tenant:acme2", [{ count: 3, window_s: 1 }]);
    const d = admit(tbl, [key, tenant], 0);
    expect(figures(d)).toEqual({ chargeIndex: 1, remaining: 2, resetMs: 334 });
  });

  it("breaks a tie in remaining by the longer reset", () => {
    const tbl = table();
    const d = admit(tbl, [charge("ip:192.0.2.77", [
      { count: 2, window_s: 1 },
      { count: 2, window_s: 60 },
    ])], 0);
    expect(d.tightest).toMatchObject({ remaining: 1, resetMs: 30_000 });
    expect(d.tightest?.limit.windowS).toBe(60);
  });
});

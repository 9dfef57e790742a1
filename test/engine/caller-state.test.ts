import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { forgetLimit, peekLimit } from "../../src/engine/caller-state";
import { admit, type Charge, wouldAdmit } from "../../src/engine/gcra";
import { compileLimit, compileLimits, type Limit } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";

const limitArb: fc.Arbitrary<Limit> = fc
  .record({
    count: fc.integer({ min: 1, max: 40 }),
    windowMs: fc.oneof(fc.constantFrom(1, 7, 999, 1000, 1001, 60_000, 3_600_000), fc.integer({ min: 1, max: 10_000 })),
    burst: fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }),
  })
  .map(({ count, windowMs, burst }) => compileLimit({ count, window_s: windowMs / 1000, ...(burst === undefined ? {} : { burst }) }));

const one = (subject: string, limit: Limit, cost: number, category = "request"): Charge[] => [{ subject, category, limits: [limit], cost }];

describe("peekLimit", () => {
  it("reads a subject with no state as a full burst, earned back", () => {
    const table = new LimiterTable(1, { seed: 3 });
    const limit = compileLimit({ count: 5, window_s: 60, burst: 8 });
    expect(peekLimit(table, "ip:192.0.2.1", "request", limit, 1000)).toEqual({ remaining: 8, resetMs: 0 });
  });

  it("gives the figures admit() puts in the headers, charges nothing, and matches what the next spends get", () => {
    fc.assert(
      fc.property(limitArb, fc.array(fc.record({ advanceMs: fc.integer({ min: 0, max: 3000 }), cost: fc.integer({ min: 1, max: 40 }) }), { minLength: 1, maxLength: 60 }), (limit, steps) => {
        const table = new LimiterTable(1, { seed: 8 });
        const subject = "key:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let nowMs = 5_000_000;
        for (const { advanceMs, cost } of steps) {
          nowMs += advanceMs;
          const before = peekLimit(table, subject, "request", limit, nowMs);
          expect(peekLimit(table, subject, "request", limit, nowMs)).toEqual(before);
          // `remaining` cost-1 spends fit now, one more does not (unless nothing is held: then it is an oversize spend, admitted whole).
          if (before.remaining > 0) expect(wouldAdmit(table, one(subject, limit, before.remaining), nowMs).allowed).toBe(true);
          if (before.resetMs > 0) expect(wouldAdmit(table, one(subject, limit, before.remaining + 1), nowMs).allowed).toBe(false);
          // Fully earned back exactly resetMs later, not 1 ms before.
          expect(peekLimit(table, subject, "request", limit, nowMs + before.resetMs)).toEqual({ remaining: limit.burst, resetMs: 0 });
          if (before.resetMs > 0) expect(peekLimit(table, subject, "request", limit, nowMs + before.resetMs - 1).remaining).toBeLessThan(limit.burst);
          const decision = admit(table, one(subject, limit, cost), nowMs);
          const after = peekLimit(table, subject, "request", limit, nowMs);
          // A denial reports the state as it stands; an admitted spend the state after it.
          expect({ remaining: decision.tightest!.remaining, resetMs: decision.tightest!.resetMs }).toEqual(decision.allowed ? after : before);
          if (!decision.allowed) expect(after).toEqual(before);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("reads one limit of several: each as the headers would show it were it the tightest", () => {
    const table = new LimiterTable(1, { seed: 4 });
    const [perSecond, perMinute] = compileLimits([{ count: 3, window_s: 1 }, { count: 100, window_s: 60 }]);
    admit(table, [{ subject: "ip:198.51.100.9", category: "request", limits: [perSecond!, perMinute!], cost: 2 }], 10_000);
    expect(peekLimit(table, "ip:198.51.100.9", "request", perSecond!, 10_000)).toEqual({ remaining: 1, resetMs: 667 });
    expect(peekLimit(table, "ip:198.51.100.9", "request", perMinute!, 10_000)).toEqual({ remaining: 98, resetMs: 1200 });
    // Another category is another state.
    expect(peekLimit(table, "ip:198.51.100.9", "upload", perSecond!, 10_000)).toEqual({ remaining: 3, resetMs: 0 });
  });
});

describe("forgetLimit", () => {
  it("drops a caller's state so its next spend is judged as a first one, and says whether it held one", () => {
    const table = new LimiterTable(1, { seed: 5 });
    const limit = compileLimit({ count: 2, window_s: 60 });
    for (let i = 0; i < 2; i++) expect(admit(table, one("ip:203.0.113.5", limit, 1), 1000).allowed).toBe(true);
    expect(admit(table, one("ip:203.0.113.5", limit, 1), 1000)).toMatchObject({ allowed: false, retryAfterMs: 30_000 });
    expect(forgetLimit(table, "ip:203.0.113.5", "request", limit, 1000)).toBe(true);
    expect(peekLimit(table, "ip:203.0.113.5", "request", limit, 1000)).toEqual({ remaining: 2, resetMs: 0 });
    expect(admit(table, one("ip:203.0.113.5", limit, 2), 1000).allowed).toBe(true);
    expect(forgetLimit(table, "ip:203.0.113.5", "request", limit, 1000)).toBe(true);
    expect(forgetLimit(table, "ip:203.0.113.5", "request", limit, 1000)).toBe(false);
    expect(forgetLimit(table, "ip:203.0.113.5", "request", limit)).toBe(false);
    expect(table.liveEntries(1000)).toBe(0);
  });

  it("answers false for a state already earned back at nowMs, and without nowMs true for any record of the key", () => {
    const table = new LimiterTable(1, { seed: 6 });
    const limit = compileLimit({ count: 1, window_s: 1 });
    admit(table, one("ip:203.0.113.6", limit, 1), 0);
    expect(forgetLimit(table, "ip:203.0.113.6", "request", limit, 1000)).toBe(false);
    admit(table, one("ip:203.0.113.6", limit, 1), 0);
    expect(forgetLimit(table, "ip:203.0.113.6", "request", limit)).toBe(true);
    expect(forgetLimit(table, "ip:203.0.113.6", "request", limit)).toBe(false);
  });

  it("leaves every other key's state as it was: other subjects, categories and limits", () => {
    const table = new LimiterTable(1, { seed: 7 });
    const [a, b] = compileLimits([{ count: 1, window_s: 60 }, { count: 10, window_s: 3600 }]);
    const charges = (subject: string, category: string): Charge[] => [{ subject, category, limits: [a!, b!], cost: 1 }];
    for (const subject of ["ip:192.0.2.7", "ip:192.0.2.8"]) for (const category of ["request", "upload"]) admit(table, charges(subject, category), 0);
    expect(forgetLimit(table, "ip:192.0.2.7", "request", a!, 0)).toBe(true);
    expect(admit(table, [{ subject: "ip:192.0.2.7", category: "request", limits: [a!], cost: 1 }], 0).allowed).toBe(true);
    expect(peekLimit(table, "ip:192.0.2.7", "request", b!, 0)).toEqual({ remaining: 9, resetMs: 360_000 });
    for (const [subject, category] of [["ip:192.0.2.7", "upload"], ["ip:192.0.2.8", "request"], ["ip:192.0.2.8", "upload"]] as const) {
      expect(admit(table, charges(subject, category), 0)).toMatchObject({ allowed: false, retryAfterMs: 60_000 });
    }
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admit, type Charge } from "../../src/engine/gcra";
import { compileLimit, type Limit, limitError, type LimitSpec, MAX_COST } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";
import { comparable, ReferenceGcra } from "./reference-gcra";

// Random limits lean on the awkward cases: fractional intervals (count not
// dividing the window), sub-second and odd windows, bursts below and above the
// count, and costs above the burst (oversize spends).
const windowMsArb = fc.oneof(fc.constantFrom(1, 7, 50, 100, 999, 1000, 1001, 3000, 60_000, 3_600_000), fc.integer({ min: 1, max: 10_000 }));
const limitArb: fc.Arbitrary<Limit> = fc
  .record({ count: fc.integer({ min: 1, max: 40 }), windowMs: windowMsArb, burst: fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }) })
  .map(({ count, windowMs, burst }) => compileLimit({ count, window_s: windowMs / 1000, ...(burst === undefined ? {} : { burst }) }));
const limitListArb = fc.array(limitArb, { minLength: 0, maxLength: 3 });

const SUBJECTS = ["key:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "ip:203.0.113.7", "ip:2001:db8:1:2::/64", "tenant:acme", "anonymous"];
const CATEGORIES = ["request", "upload"];

const chargeArb = fc.record({
  subject: fc.constantFrom(...SUBJECTS),
  category: fc.constantFrom(...CATEGORIES),
  limits: limitListArb,
  cost: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 40 })),
});

const stepArb = fc.record({
  advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 4_000_000 })),
  charges: fc.array(chargeArb, { minLength: 1, maxLength: 3 }),
});

// A limit list per (subject, category) that stays the same across a run, as
// it would between config changes, so states build up; some steps use fresh
// lists instead, which must start from fresh state.
const runArb = fc.record({
  startMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 2 ** 42 })),
  fixedLimits: fc.array(limitListArb, { minLength: SUBJECTS.length * CATEGORIES.length, maxLength: SUBJECTS.length * CATEGORIES.length }),
  steps: fc.array(fc.record({ step: stepArb, useFixed: fc.boolean() }), { minLength: 1, maxLength: 120 }),
});

describe("admit against the BigInt reference model", () => {
  // 16 MiB holds ~1M states and a run touches at most a few hundred keys, so
  // nothing is evicted. The second table starts its active region at 8 sets
  // and reviews it every 5 writes, so the same runs also cross many doublings
  // and halvings, which must change nothing.
  it.each([
    ["a 16 MiB table", () => new LimiterTable(16, { seed: 12345 })],
    ["a 1 MiB table growing from 512 bytes and halving when idle", () => new LimiterTable(1, { seed: 54321, activeStartBytes: 64, reviewEveryWrites: 5 })],
  ])("gives identical decisions, delays and header figures over random sequences of times, costs, limits and subjects (%s)", (_name, makeTable) => {
    fc.assert(
      fc.property(runArb, ({ startMs, fixedLimits, steps }) => {
        const table = makeTable();
        const reference = new ReferenceGcra();
        let nowMs = startMs;
        for (const { step, useFixed } of steps) {
          nowMs += step.advanceMs;
          const charges: Charge[] = step.charges.map((c) => {
            const fixed = fixedLimits[SUBJECTS.indexOf(c.subject) * CATEGORIES.length + CATEGORIES.indexOf(c.category)]!;
            return { ...c, limits: useFixed ? fixed : c.limits };
          });
          const expected = comparable(reference.admit(charges, nowMs));
          const actual = comparable(admit(table, charges, nowMs));
          expect(actual).toEqual(expected);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("gives identical decisions while hundreds of live states force the active region to double and halve", () => {
    const lists = [
      [compileLimit({ count: 1, window_s: 100, burst: 2 })],
      [compileLimit({ count: 3, window_s: 10 }), compileLimit({ count: 20, window_s: 600 })],
      [compileLimit({ count: 7, window_s: 1.5 })],
    ];
    // A few hot subjects come back often (so a state moved by a halving is read
    // again), a broad pool makes many states live at once (so the region
    // doubles), and a rare idle gap lets them all be earned back (so it halves).
    const stepArb = fc.record({
      advanceMs: fc.oneof(
        { weight: 30, arbitrary: fc.integer({ min: 0, max: 30 }) },
        { weight: 8, arbitrary: fc.integer({ min: 0, max: 5000 }) },
        { weight: 1, arbitrary: fc.constant(700_000) },
      ),
      subject: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 7 }) }, { weight: 2, arbitrary: fc.integer({ min: 8, max: 399 }) }),
      list: fc.integer({ min: 0, max: lists.length - 1 }),
      cost: fc.integer({ min: 1, max: 3 }),
    });
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 50, maxLength: 1500 }), fc.integer({ min: 1, max: 9 }), (steps, reviewEveryWrites) => {
        const table = new LimiterTable(1, { seed: 4242, activeStartBytes: 64, reviewEveryWrites });
        const reference = new ReferenceGcra();
        let nowMs = 1_000_000;
        for (const step of steps) {
          nowMs += step.advanceMs;
          const charges: Charge[] = [{ subject: `ip:198.51.100.${step.subject}`, category: "request", limits: lists[step.list]!, cost: step.cost }];
          expect(comparable(admit(table, charges, nowMs))).toEqual(comparable(reference.admit(charges, nowMs)));
        }
      }),
      { numRuns: 60 },
    );
  });

  it("stays exact at the bounds: prime counts near 10^9, year-long windows, bursts of 10^9, costs up to MAX_COST", () => {
    const extremeSpecs: LimitSpec[] = [
      { count: 999_999_937, window_s: 1.001, burst: 1_000_000_000 },
      { count: 999_999_937, window_s: 3600 },
      { count: 1, window_s: 31_622_400 },
      { count: 7, window_s: 31_622_399.999, burst: 1000 },
      { count: 3, window_s: 0.001, burst: 1_000_000_000 },
      { count: 1_000_000_000, window_s: 0.001 },
    ];
    for (const spec of extremeSpecs) expect(limitError(spec)).toBeNull();
    const extremeLimit = fc.constantFrom(...extremeSpecs.map((spec) => compileLimit(spec)));
    const extremeCharge = fc.record({
      subject: fc.constantFrom(...SUBJECTS),
      category: fc.constantFrom(...CATEGORIES),
      limits: fc.uniqueArray(extremeLimit, { maxLength: 2 }),
      cost: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: MAX_COST }), fc.constant(MAX_COST)),
    });
    const advance = fc.oneof(fc.integer({ min: 0, max: 10 }), fc.integer({ min: 0, max: 10_000_000 }), fc.integer({ min: 0, max: 40_000_000_000 }));
    fc.assert(
      fc.property(fc.array(fc.record({ advanceMs: advance, charges: fc.array(extremeCharge, { minLength: 1, maxLength: 2 }) }), { minLength: 1, maxLength: 60 }), (steps) => {
        const table = new LimiterTable(1, { seed: 777, activeStartBytes: 64, reviewEveryWrites: 3 });
        const reference = new ReferenceGcra();
        let nowMs = 1_700_000_000_000;
        for (const step of steps) {
          nowMs += step.advanceMs;
          expect(comparable(admit(table, step.charges, nowMs))).toEqual(comparable(reference.admit(step.charges, nowMs)));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("decides a lone charge with one limit (the shortcut) as the general path does", () => {
    const unmetered: Charge = { subject: "anonymous", category: "request", limits: [], cost: 1 };
    fc.assert(
      fc.property(limitArb, fc.array(fc.record({ advanceMs: fc.integer({ min: 0, max: 3000 }), cost: fc.integer({ min: 1, max: 40 }) }), { minLength: 1, maxLength: 80 }), (limit, steps) => {
        const alone = new LimiterTable(1, { seed: 5 });
        const general = new LimiterTable(1, { seed: 5 });
        let nowMs = 0;
        for (const { advanceMs, cost } of steps) {
          nowMs += advanceMs;
          const charge: Charge = { subject: "ip:203.0.113.7", category: "request", limits: [limit], cost };
          expect(admit(alone, [charge], nowMs)).toEqual(admit(general, [charge, unmetered], nowMs));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("admits the same spend exactly retryAfterMs later and denies it 1 ms earlier", () => {
    // The first charge is always metered, so repeating the spend at one instant
    // reaches a denial: each admitted spend moves a TAT on by n·T, and the
    // tolerance is B·T (an oversize spend is admitted once, then denied).
    const meteredArb = fc.record({
      subject: fc.constantFrom(...SUBJECTS),
      category: fc.constantFrom(...CATEGORIES),
      limits: fc.array(limitArb, { minLength: 1, maxLength: 3 }),
      cost: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 40 })),
    });
    const chargesArb = fc.tuple(meteredArb, fc.array(chargeArb, { maxLength: 2 })).map(([first, rest]) => [first, ...rest]);
    let checked = 0;
    fc.assert(
      fc.property(chargesArb, fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 30 }), (charges, gapsMs) => {
        const table = new LimiterTable(16, { seed: 99 });
        let nowMs = 1_000_000;
        let last = admit(table, charges, nowMs);
        for (const gapMs of gapsMs) {
          nowMs += gapMs;
          last = admit(table, charges, nowMs);
        }
        // Drive to a denial at the same instant: at most burst + 1 ≤ 41 spends of cost ≥ 1.
        for (let spends = 0; last.allowed && spends < 50; spends++) last = admit(table, charges, nowMs);
        expect(last.allowed).toBe(false);
        checked++;
        const delayMs = last.retryAfterMs;
        expect(delayMs).toBeGreaterThan(0);
        // A denial charges nothing, so probing the same table leaves its state as it was.
        expect(admit(table, charges, nowMs + delayMs - 1).allowed).toBe(false);
        expect(admit(table, charges, nowMs + delayMs).allowed).toBe(true);
      }),
      { numRuns: 400 },
    );
    expect(checked).toBe(400);
  });
});

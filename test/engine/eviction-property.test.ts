import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admit, type Charge } from "../../src/engine/gcra";
import { compileLimit, type Limit } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";
import { comparable, ReferenceGcra } from "./reference-gcra";

// Tables small enough that their sets are full most of the time, so states
// are forgotten on almost every step, compared with a model that forgets the
// state earned back soonest (the incoming one included) in a key's two sets.
// The tables never grow: the active region is the whole table from the start,
// so no state is ever moved to make room. With one set, a key's two sets are
// that one; with four, a key's second set is any of them.
const MIB = 1024 * 1024;
const subjects = (addresses: number) => Array.from({ length: addresses }, (_, i) => `ip:192.0.2.${i}`).concat(["tenant:acme", "anonymous"]);
const TABLES = [
  ["one set of four ways (fully associative)", (seed: number) => new LimiterTable(64 / MIB, { seed }), subjects(10)],
  ["four sets of four ways, two per key", (seed: number) => new LimiterTable(256 / MIB, { seed, activeStartBytes: 256 }), subjects(24)],
] as const;
const CATEGORIES = ["request", "upload"];

// Short and long windows side by side, so a full set holds states earned back
// at very different times, and fractional intervals, so whole-ms ties occur.
const windowMsArb = fc.constantFrom(1, 7, 100, 999, 1000, 3000, 60_000, 3_600_000);
const limitArb: fc.Arbitrary<Limit> = fc
  .record({ count: fc.integer({ min: 1, max: 12 }), windowMs: windowMsArb, burst: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }) })
  .map(({ count, windowMs, burst }) => compileLimit({ count, window_s: windowMs / 1000, ...(burst === undefined ? {} : { burst }) }));
const listArb = fc.uniqueArray(limitArb, { minLength: 1, maxLength: 3, selector: (l) => `${l.count}/${l.windowMs}/${l.burst}` });

const runArb = (SUBJECTS: readonly string[]) => fc.record({
  seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
  lists: fc.array(listArb, { minLength: SUBJECTS.length * CATEGORIES.length, maxLength: SUBJECTS.length * CATEGORIES.length }),
  steps: fc.array(
    fc.record({
      advanceMs: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 20 }) }, { weight: 3, arbitrary: fc.integer({ min: 0, max: 2000 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 400_000 }) }),
      charges: fc.array(
        fc.record({ subject: fc.integer({ min: 0, max: SUBJECTS.length - 1 }), category: fc.integer({ min: 0, max: CATEGORIES.length - 1 }), cost: fc.oneof(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 0, max: 8 })) }),
        { minLength: 1, maxLength: 3 },
      ),
    }),
    { minLength: 1, maxLength: 150 },
  ),
});

describe("admit with eviction against the evicting reference model", () => {
  it.each(TABLES)("gives identical decisions and keeps the same states across full sets (%s)", (_name, makeTable, SUBJECTS) => {
    let evicted = 0;
    let droppedIncoming = 0;
    fc.assert(
      fc.property(runArb(SUBJECTS), ({ seed, lists, steps }) => {
        const table = makeTable(seed);
        const place = (subject: string, category: string, limit: Limit) => {
          table.hashKey(subject, category);
          const first = table.setBaseOf(limit);
          const tie = table.tagOf(limit);
          return { groups: [first, table.otherSetBase(first, tie)] as const, tie };
        };
        // The table tells keys apart by set and 32-bit tag only; a run whose keys collide there is not this test's subject.
        const keys: { subject: string; category: string; limit: Limit }[] = [];
        const seen = new Set<string>();
        SUBJECTS.forEach((subject, s) =>
          CATEGORIES.forEach((category, c) => {
            for (const limit of lists[s * CATEGORIES.length + c]!) {
              const { groups, tie } = place(subject, category, limit);
              seen.add(`${groups[0]}/${tie}`);
              keys.push({ subject, category, limit });
            }
          }),
        );
        fc.pre(seen.size === keys.length);
        const reference = new ReferenceGcra({ capacity: 4, groupsOf: (...k) => place(...k).groups, tieOf: (...k) => place(...k).tie });
        let nowMs = 1_000_000;
        for (const step of steps) {
          nowMs += step.advanceMs;
          const charges: Charge[] = step.charges.map(({ subject, category, cost }) => ({
            subject: SUBJECTS[subject]!,
            category: CATEGORIES[category]!,
            limits: lists[subject * CATEGORIES.length + category]!,
            cost,
          }));
          expect(comparable(admit(table, charges, nowMs))).toEqual(comparable(reference.admit(charges, nowMs)));
          for (const { subject, category, limit } of keys) {
            expect(table.earnedBackAtMs(subject, category, limit, nowMs) !== null).toBe(reference.holds({ subject, category }, limit, nowMs));
          }
          expect(table.liveEntries(nowMs)).toBeLessThanOrEqual(table.slotCount);
        }
        evicted += reference.evicted;
        droppedIncoming += reference.droppedIncoming;
      }),
      { numRuns: 200 },
    );
    // The sets were full often enough for both ways of forgetting to be compared many times
    // (one set: ~700 and ~1,500 per 200 runs; four: ~150 and ~120).
    expect(evicted).toBeGreaterThan(40);
    expect(droppedIncoming).toBeGreaterThan(40);
  });
});

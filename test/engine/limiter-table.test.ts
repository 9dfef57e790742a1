import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admit, type Charge } from "../../src/engine/gcra";
import { compileLimits, type Limit } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";

// 64 bytes: a table of one set of four slots, so every key lands in the same set.
const ONE_SET_MIB = 64 / (1024 * 1024);
const ONE_PER_10S = compileLimits([{ count: 1, window_s: 10 }]);

function spend(table: LimiterTable, subject: string, nowMs: number, limits: readonly Limit[] = ONE_PER_10S, cost = 1) {
  const charges: Charge[] = [{ subject, category: "request", limits, cost }];
  return admit(table, charges, nowMs);
}

describe("LimiterTable", () => {
  it("sizes itself from maxMemoryMiB: 16 MiB holds 1,048,576 slots of 16 bytes", () => {
    const table = new LimiterTable(16);
    expect(table.byteSize).toBe(16 * 1024 * 1024);
    expect(table.slotCount).toBe(1_048_576);
    expect(table.byteSize / table.slotCount).toBe(16);
    expect(new LimiterTable(ONE_SET_MIB).slotCount).toBe(4);
    expect(new LimiterTable(3).byteSize).toBe(2 * 1024 * 1024);
  });

  it("refuses a size that is not a finite number > 0", () => {
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => new LimiterTable(bad)).toThrow(RangeError);
  });

  it("keeps the same byte size after 10k and after 1M distinct keys", () => {
    const table = new LimiterTable(1, { seed: 3 });
    const before = table.byteSize;
    for (let i = 0; i < 10_000; i++) spend(table, `ip:10.0.${i >> 8}.${i & 255}`, 0);
    const after10k = table.byteSize;
    for (let i = 0; i < 1_000_000; i++) spend(table, `key:${i}`, 1);
    expect([after10k, table.byteSize]).toEqual([before, before]);
    expect(table.liveEntries(1)).toBeLessThanOrEqual(table.slotCount);
    expect(table.liveEntries(1)).toBeGreaterThan(table.slotCount * 0.9);
  });

  it("still admits a fresh key when every slot holds live state", () => {
    const table = new LimiterTable(ONE_SET_MIB, { seed: 1 });
    for (let i = 0; i < 4; i++) expect(spend(table, `ip:192.0.2.${i}`, 0).allowed).toBe(true);
    expect(table.liveEntries(0)).toBe(4);
    expect(spend(table, "ip:192.0.2.200", 0).allowed).toBe(true);
    expect(table.liveEntries(0)).toBe(4);
  });

  it("replaces the entry earned back soonest and keeps the later ones", () => {
    const table = new LimiterTable(ONE_SET_MIB, { seed: 1 });
    // Earned back at 10 000, 11 000, 12 000, 13 000.
    for (let i = 0; i < 4; i++) spend(table, `key:k${i}`, i * 1000);
    spend(table, "key:fresh", 4000);
    expect(table.earnedBackAtMs("key:k0", "request", ONE_PER_10S[0]!, 4000)).toBeNull();
    for (let i = 1; i < 4; i++) expect(spend(table, `key:k${i}`, 4000)).toMatchObject({ allowed: false, retryAfterMs: 6000 + i * 1000 });
    expect(table.earnedBackAtMs("key:fresh", "request", ONE_PER_10S[0]!, 4000)).toBe(14_000);
  });

  it("forgets an incoming state earned back sooner than every live one, rather than free a caller limited for an hour", () => {
    const table = new LimiterTable(ONE_SET_MIB, { seed: 1 });
    const hourly = compileLimits([{ count: 1, window_s: 3600 }]);
    const quick = compileLimits([{ count: 1000, window_s: 1 }]);
    for (let i = 0; i < 4; i++) expect(spend(table, `ip:192.0.2.${i}`, 0, hourly).allowed).toBe(true);
    // Earned back 1 ms later: the set's soonest state, so it is the one not kept.
    expect(spend(table, "ip:198.51.100.1", 1000, quick)).toMatchObject({ allowed: true, tightest: { resetMs: 1 } });
    for (let i = 0; i < 4; i++) expect(spend(table, `ip:192.0.2.${i}`, 1000, hourly)).toMatchObject({ allowed: false, retryAfterMs: 3_599_000 });
    expect(table.earnedBackAtMs("ip:198.51.100.1", "request", quick[0]!, 1000)).toBeNull();
    // An incoming state earned back later than one of them replaces the soonest.
    expect(spend(table, `ip:192.0.2.0`, 3_600_000, hourly).allowed).toBe(true);
    for (let i = 1; i < 4; i++) expect(table.earnedBackAtMs(`ip:192.0.2.${i}`, "request", hourly[0]!, 3_600_000)).toBeNull();
  });

  it("gives a key a second set: keys sharing both their sets hold eight live states, and only a ninth forgets one", () => {
    // Two sets (128 bytes): every key's first set is one of them; a key whose tag is odd has the other as its second.
    const table = new LimiterTable(128 / (1024 * 1024), { seed: 17 });
    const hourly = compileLimits([{ count: 1, window_s: 3600 }]);
    const both: string[] = [];
    for (let i = 0; both.length < 9; i++) {
      table.hashKey(`ip:192.0.2.${i}`, "request");
      if (table.otherSetBase(table.setBaseOf(hourly[0]!), table.tagOf(hourly[0]!)) !== table.setBaseOf(hourly[0]!)) both.push(`ip:192.0.2.${i}`);
    }
    both.slice(0, 8).forEach((subject, i) => expect(spend(table, subject, i, hourly).allowed).toBe(true));
    expect(table.liveEntries(8)).toBe(8);
    for (let i = 0; i < 8; i++) expect(spend(table, both[i]!, 8, hourly)).toMatchObject({ allowed: false, retryAfterMs: 3_600_000 + i - 8 });
    // The ninth is earned back last, so the state earned back soonest (the first) is forgotten.
    expect(spend(table, both[8]!, 8, hourly).allowed).toBe(true);
    expect(table.earnedBackAtMs(both[0]!, "request", hourly[0]!, 8)).toBeNull();
    for (let i = 1; i < 9; i++) expect(table.earnedBackAtMs(both[i]!, "request", hourly[0]!, 8)).not.toBeNull();
  });

  it("moves a live state to its own other set to make room, rather than double the region", () => {
    // 1 MiB starting at 8 sets (512 bytes): second sets lie within those 8.
    const table = new LimiterTable(1, { seed: 23, activeStartBytes: 64 });
    const hourly = compileLimits([{ count: 1, window_s: 3600 }]);
    const limit = hourly[0]!;
    let fresh = 0;
    const find = (wanted: (first: number, other: number) => boolean) => {
      for (;;) {
        const subject = `ip:198.51.100.${fresh++}`;
        table.hashKey(subject, "request");
        const first = table.setBaseOf(limit) / 4;
        if (wanted(first, table.otherSetBase(first * 4, table.tagOf(limit)) / 4)) return subject;
      }
    };
    expect(table.activeBytes).toBe(512);
    // Set 0 full of keys whose second set is 2..5 (empty); set 1 full of keys whose second set is 0.
    const movable = [2, 3, 4, 5].map((other) => find((f, o) => f === 0 && o === other));
    const stuck = [0, 1, 2, 3].map(() => find((f, o) => f === 1 && o === 0));
    // A key whose two sets are 0 and 1, both full: one of set 0's states moves to its second set.
    const last = find((f, o) => f === 0 && o === 1);
    const subjects = [...movable, ...stuck, last];
    subjects.forEach((subject, i) => expect(spend(table, subject, i, hourly).allowed).toBe(true));
    expect(table.activeBytes).toBe(512);
    expect(table.liveEntries(9)).toBe(9);
    subjects.forEach((subject, i) => expect(table.earnedBackAtMs(subject, "request", limit, 9)).toBe(3_600_000 + i));
  });

  it("keeps 100k live callers in a 4 MiB part of a 16 MiB table, none forgotten", () => {
    const table = new LimiterTable(16, { seed: 29 });
    const hourly = compileLimits([{ count: 10, window_s: 3600 }]);
    for (let i = 0; i < 100_000; i++) spend(table, `ip:10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, 0, hourly);
    expect(table.liveEntries(0)).toBe(100_000);
    expect(table.activeBytes).toBeLessThanOrEqual(4 * 1024 * 1024);
  });

  it("tells subjects apart by every character, except a key digest by its first 16 hex digits (64 bits)", () => {
    const table = new LimiterTable(1, { seed: 31 });
    const digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    const lastChanged = (subject: string) => `${subject.slice(0, -1)}${subject.endsWith("0") ? "1" : "0"}`;
    // 68 characters like a key subject, but not one: every character counts.
    for (const subject of [`tenant:${digest.slice(0, 61)}`, `kex:${digest}`, `key:${digest}x`, `ip:${digest}`]) {
      expect(spend(table, subject, 0).allowed).toBe(true);
      expect(spend(table, lastChanged(subject), 0).allowed).toBe(true);
      expect(spend(table, subject, 0).allowed).toBe(false);
    }
    expect(spend(table, `key:${digest}`, 0).allowed).toBe(true);
    expect(spend(table, `key:${digest.slice(0, 15)}0${digest.slice(16)}`, 0).allowed).toBe(true);
    // A SHA-256 digest is uniform, and nobody can choose a key whose digest starts like another's.
    expect(spend(table, `key:${lastChanged(digest)}`, 0).allowed).toBe(false);
  });

  it("counts an entry whose TAT is not after now as empty", () => {
    const table = new LimiterTable(ONE_SET_MIB, { seed: 1 });
    spend(table, "ip:198.51.100.1", 0);
    expect(table.liveEntries(9_999)).toBe(1);
    expect(table.liveEntries(10_000)).toBe(0);
    expect(table.earnedBackAtMs("ip:198.51.100.1", "request", ONE_PER_10S[0]!, 10_000)).toBeNull();
    // An earned-back entry is reused before any live one is replaced.
    for (let i = 0; i < 3; i++) spend(table, `ip:198.51.100.${10 + i}`, 5000);
    spend(table, "ip:198.51.100.99", 10_000);
    for (let i = 0; i < 3; i++) expect(spend(table, `ip:198.51.100.${10 + i}`, 10_000).allowed).toBe(false);
  });

  it("starts with a 256 KiB active region and doubles it instead of evicting live state", () => {
    const table = new LimiterTable(16, { seed: 11 });
    expect(table.activeBytes).toBe(256 * 1024);
    // 1 MiB table starting at 512 bytes (8 sets, 32 slots): 200 live keys force several doublings.
    const small = new LimiterTable(1, { seed: 11, activeStartBytes: 64 });
    expect(small.activeBytes).toBe(512);
    for (let i = 0; i < 200; i++) expect(spend(small, `ip:203.0.113.${i}`, i).allowed).toBe(true);
    expect(small.activeBytes).toBeGreaterThan(200 * 16);
    expect(small.activeBytes).toBeLessThanOrEqual(small.byteSize);
    expect(small.liveEntries(200)).toBe(200);
    for (let i = 0; i < 200; i++) {
      expect(small.earnedBackAtMs(`ip:203.0.113.${i}`, "request", ONE_PER_10S[0]!, 200)).toBe(10_000 + i);
      expect(spend(small, `ip:203.0.113.${i}`, 200)).toMatchObject({ allowed: false, retryAfterMs: 9800 + i });
    }
  });

  it("halves the active region once its states are earned back, keeping the live ones", () => {
    const table = new LimiterTable(1, { seed: 13, activeStartBytes: 64, reviewEveryWrites: 64 });
    const hourly = compileLimits([{ count: 1, window_s: 3600 }]);
    for (let i = 0; i < 2000; i++) spend(table, `ip:198.51.100.${i}`, 0, hourly);
    const grown = table.activeBytes;
    expect(grown).toBeGreaterThanOrEqual(2000 * 16);
    // An hour later only a few new callers are live: the region halves, step by step.
    const laterMs = 3_600_000;
    for (let i = 0; i < 5000; i++) spend(table, `ip:203.0.113.${i % 5}`, laterMs + i * 1000, ONE_PER_10S);
    expect(table.activeBytes).toBeLessThan(grown / 8);
    const nowMs = laterMs + 4999 * 1000;
    for (let i = 0; i < 5; i++) expect(spend(table, `ip:203.0.113.${i}`, nowMs).allowed).toBe(false);
  });

  it("does not halve the active region while one pair of sets holds more live states than one set can", () => {
    const REVIEW = 1000;
    const table = new LimiterTable(1, { seed: 21, activeStartBytes: 64, reviewEveryWrites: REVIEW });
    const shortLived = compileLimits([{ count: 1, window_s: 1 }]);
    const hourly = compileLimits([{ count: 1, window_s: 3600 }]);
    let writes = 0;
    let fresh = 0;
    const spendCounted = (subject: string, nowMs: number, limits: readonly Limit[]) => {
      if (spend(table, subject, nowMs, limits).allowed) writes++;
    };
    // Subjects whose set under the current active region is `setIndex`.
    const subjectsInSet = (setIndex: number, count: number, limits: readonly Limit[]) => {
      const found: string[] = [];
      while (found.length < count) {
        const subject = `ip:192.0.2.${fresh++}`;
        table.hashKey(subject, "request");
        if (table.setBaseOf(limits[0]!) === setIndex * 4) found.push(subject);
      }
      return found;
    };
    // Grow from 8 to 64 sets: five short-lived states in one set each time.
    while (table.activeBytes < 64 * 64) for (const subject of subjectsInSet(0, 5, shortLived)) spendCounted(subject, 0, shortLived);
    expect(table.activeBytes).toBe(64 * 64);
    // Five hourly states in the twin sets 1 and 33 (3 + 2 > 4), once the short ones are earned back.
    const pair = [...subjectsInSet(1, 3, hourly), ...subjectsInSet(33, 2, hourly)];
    for (const subject of pair) spendCounted(subject, 2000, hourly);
    // Pad with one roomy caller up to the next review: 6 live of 256 slots is under 1/32.
    const roomy = compileLimits([{ count: 1_000_000, window_s: 1 }]);
    while (writes % REVIEW !== 0) spendCounted("ip:198.51.100.250", 2000, roomy);
    expect(table.activeBytes).toBe(64 * 64);
    for (const subject of pair) expect(table.earnedBackAtMs(subject, "request", hourly[0]!, 2000)).toBe(3_602_000);
  });

  it("keeps the active region small while states are earned back between spends", () => {
    const table = new LimiterTable(16, { seed: 12 });
    const quick = compileLimits([{ count: 1000, window_s: 1 }]);
    for (let i = 0; i < 100_000; i++) spend(table, `ip:10.1.${i >> 8}.${i & 255}`, i * 2, quick);
    expect(table.activeBytes).toBe(256 * 1024);
  });

  it("forgets only the state earned back soonest, the incoming one included, under a flood of fresh keys into one set", () => {
    const limitArb = fc.constantFrom(...[1, 2, 5, 30, 600].map((windowS) => compileLimits([{ count: 1, window_s: windowS, burst: 3 }])));
    fc.assert(
      fc.property(fc.array(fc.record({ advanceMs: fc.integer({ min: 0, max: 2000 }), limits: limitArb, cost: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 60 }), (flood) => {
        const table = new LimiterTable(ONE_SET_MIB, { seed: 5 });
        const known: { subject: string; limits: readonly Limit[] }[] = [];
        let nowMs = 0;
        flood.forEach(({ advanceMs, limits, cost }, i) => {
          nowMs += advanceMs;
          const tatOf = (k: { subject: string; limits: readonly Limit[] }) => table.earnedBackAtMs(k.subject, "request", k.limits[0]!, nowMs);
          const before = known.map(tatOf);
          const subject = `ip:203.0.113.${i}`;
          const decision = spend(table, subject, nowMs, limits, cost);
          expect(decision.allowed).toBe(true);
          const incomingMs = nowMs + decision.tightest!.resetMs;
          const kept = tatOf({ subject, limits });
          const after = known.map(tatOf);
          const liveBefore = before.filter((v): v is number => v !== null);
          const lost = known.filter((_, k) => before[k] !== null && after[k] === null).length;
          expect(lost).toBeLessThanOrEqual(1);
          if (kept === null) {
            // Dropped: the set was full and nothing in it is earned back sooner than the incoming state.
            expect(liveBefore.length).toBe(4);
            expect(lost).toBe(0);
            expect(incomingMs).toBeLessThanOrEqual(Math.min(...liveBefore));
          } else {
            expect(kept).toBe(incomingMs);
          }
          for (let k = 0; k < known.length; k++) {
            // Whatever was replaced was earned back no later than every entry still there, and before the incoming one.
            if (before[k] !== null && after[k] === null) {
              expect(before[k]).toBe(Math.min(...liveBefore));
              expect(before[k]).toBeLessThan(incomingMs);
            }
          }
          known.push({ subject, limits });
          expect(table.liveEntries(nowMs)).toBeLessThanOrEqual(4);
        });
      }),
      { numRuns: 200 },
    );
  });
});

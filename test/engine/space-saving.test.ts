import { describe, expect, it } from "vitest";
import { SpaceSaving } from "../../src/engine/space-saving";
import { TrafficCounts, flushedMinute, MINUTE_MS } from "../../src/engine/traffic-counts";
import { mulberry32 } from "../prng";

describe("the Space-Saving sketch", () => {
  it("keeps a caller that makes 30 % of refusals among 10,000 others, with a count within its error of the truth", () => {
    for (const seed of [1, 7, 2026]) {
      const random = mulberry32(seed);
      const sketch = new SpaceSaving(64);
      const heavy = "key:k7m2q9x4a1bc";
      let heavyTrue = 0;
      let others = 0;
      // 10,000 others once each, the heavy caller 30 % of all: 4,286 of 14,286.
      while (others < 10_000 || heavyTrue < 4_286) {
        const pickHeavy = heavyTrue < 4_286 && (others >= 10_000 || random() < 0.3);
        if (pickHeavy) {
          sketch.add(heavy);
          heavyTrue += 1;
        } else {
          sketch.add(`ip:10.${others >> 16}.${(others >> 8) & 255}.${others & 255}`);
          others += 1;
        }
      }
      const top = sketch.top();
      expect(top[0]?.item, `seed ${seed}`).toBe(heavy);
      expect(top[0]!.count).toBeGreaterThanOrEqual(heavyTrue);
      expect(top[0]!.count - top[0]!.error).toBeLessThanOrEqual(heavyTrue);
      expect(sketch.size).toBe(64);
      expect(sketch.total).toBe(14_286);
    }
  });

  it("never undercounts, and every item above N / capacity is held (against exact counts)", () => {
    const random = mulberry32(42);
    const sketch = new SpaceSaving(16);
    const truth = new Map<string, number>();
    for (let i = 0; i < 20_000; i++) {
      // A skewed stream: item n with weight ~ 1/(n+1).
      const n = Math.floor(1 / (random() + 0.0005)) % 500;
      const item = `c${n}`;
      sketch.add(item);
      truth.set(item, (truth.get(item) ?? 0) + 1);
    }
    const held = new Map(sketch.top().map((h) => [h.item, h]));
    for (const [item, count] of truth) {
      const h = held.get(item);
      if (count > 20_000 / 16) expect(h, item).toBeDefined();
      if (h !== undefined) {
        expect(h.count).toBeGreaterThanOrEqual(count);
        expect(h.count - h.error).toBeLessThanOrEqual(count);
      }
    }
  });

  it("refuses a capacity outside 1–64", () => {
    expect(() => new SpaceSaving(0)).toThrow(RangeError);
    expect(() => new SpaceSaving(65)).toThrow(RangeError);
  });
});

describe("an isolate's traffic counts", () => {
  const bounds = { maxMinutes: 3, maxCells: 4, sketchCapacity: 8 };

  it("counts per minute, tenant and decision, and names refused callers in the minute's sketch", () => {
    const counts = new TrafficCounts(bounds);
    const t0 = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE_MS);
    counts.count(t0, "acme", "admitted", null);
    counts.count(t0 + 1, "acme", "admitted", null);
    counts.count(t0 + 2, "acme", "rate_limited", "key:abc");
    counts.count(t0 + MINUTE_MS, null, "blocked", "ip:192.0.2.1");
    const taken = counts.take().map((m) => flushedMinute(m, 10));
    expect(taken).toEqual([
      { minuteMs: t0, rows: [{ tenant: "acme", decision: "admitted", count: 2 }, { tenant: "acme", decision: "rate_limited", count: 1 }], topRefused: [{ item: "key:abc", tag: "acme", count: 1, error: 0 }], shadow: [] },
      { minuteMs: t0 + MINUTE_MS, rows: [{ tenant: "anonymous", decision: "blocked", count: 1 }], topRefused: [{ item: "ip:192.0.2.1", tag: "anonymous", count: 1, error: 0 }], shadow: [] },
    ]);
    expect(counts.pendingMinutes).toBe(0);
  });

  it("holds at most maxMinutes, dropping the oldest first and counting them", () => {
    const counts = new TrafficCounts(bounds);
    for (let m = 0; m < 5; m++) counts.count(m * MINUTE_MS, "t", "admitted", null);
    expect(counts.pendingMinutes).toBe(3);
    expect(counts.droppedMinutes).toBe(2);
    expect(counts.take().map((m) => m.minuteMs)).toEqual([2, 3, 4].map((m) => m * MINUTE_MS));
  });

  it("drops and counts a new cell past maxCells, while existing cells still count", () => {
    const counts = new TrafficCounts(bounds);
    for (let i = 0; i < 6; i++) counts.count(0, `t${i}`, "admitted", null);
    counts.count(0, "t0", "admitted", null);
    expect(counts.droppedCounts).toBe(2);
    const [minute] = counts.take().map((m) => flushedMinute(m, 10));
    expect(minute!.rows.find((r) => r.tenant === "t0")?.count).toBe(2);
    expect(minute!.rows).toHaveLength(4);
  });

  it("puts a failed flush back, merged with what was counted since, losing nothing", () => {
    const counts = new TrafficCounts(bounds);
    counts.count(0, "t", "admitted", null);
    counts.count(1, "t", "rate_limited", "key:a");
    const failed = counts.take();
    counts.count(2, "t", "admitted", null);
    counts.count(MINUTE_MS, "t", "admitted", null);
    counts.putBack(failed);
    const minutes = counts.take().map((m) => flushedMinute(m, 10));
    expect(minutes.map((m) => m.minuteMs)).toEqual([0, MINUTE_MS]);
    expect(minutes[0]!.rows).toEqual([{ tenant: "t", decision: "admitted", count: 2 }, { tenant: "t", decision: "rate_limited", count: 1 }]);
    expect(minutes[0]!.topRefused.map((h) => [h.item, h.count])).toEqual([["key:a", 1]]);
  });

  it("puts a failed flush back into a minute with refusals counted since, keeping both's top-refused counts", () => {
    const counts = new TrafficCounts(bounds);
    for (let i = 0; i < 3; i++) counts.count(i, "t", "rate_limited", "key:a");
    const failed = counts.take();
    counts.count(10, "t", "rate_limited", "key:a");
    counts.count(11, "u", "rate_limited", "key:b");
    counts.putBack(failed);
    const [minute] = counts.take().map((m) => flushedMinute(m, 10));
    expect(minute!.topRefused.map((h) => [h.item, h.tag, h.count])).toEqual([
      ["key:a", "t", 4],
      ["key:b", "u", 1],
    ]);
    expect(minute!.rows).toEqual([
      { tenant: "t", decision: "rate_limited", count: 4 },
      { tenant: "u", decision: "rate_limited", count: 1 },
    ]);
  });
});

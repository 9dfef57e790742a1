import { describe, expect, it } from "vitest";
import { authFailureRejections, createRejectionCounter, rateLimitRejections, type SustainedEvent } from "../../src/cache/rejection-counter";

const THRESHOLD = 100;
const WINDOW_MS = 60_000;
/** A window start: a multiple of WINDOW_MS. */
const W0 = 1_900_000_020_000;

/** A stand-in for the sha256 hex digest the pipeline passes. */
function digest(n: number): string {
  return n.toString(16).padStart(64, "0");
}

function refuse(counter: ReturnType<typeof createRejectionCounter>, callerKey: string, category: string, times: number, atMs: (i: number) => number) {
  const events: { index: number; event: SustainedEvent }[] = [];
  for (let i = 0; i < times; i++) {
    const event = counter.record(callerKey, category, atMs(i), THRESHOLD, WINDOW_MS);
    if (event !== null) events.push({ index: i, event });
  }
  return events;
}

describe("rejection counter", () => {
  it("reports 250 refusals in one window once, at the 101st, and again once in the next window", () => {
    const counter = createRejectionCounter(100);
    const caller = digest(1);
    const first = refuse(counter, caller, "default", 250, (i) => W0 + i * 200);
    expect(first).toEqual([{ index: 100, event: { callerKey: caller, category: "default", count: 101, windowStartMs: W0 } }]);

    const second = refuse(counter, caller, "default", 250, (i) => W0 + WINDOW_MS + i);
    expect(second).toEqual([{ index: 100, event: { callerKey: caller, category: "default", count: 101, windowStartMs: W0 + WINDOW_MS } }]);
  });

  it("aligns windows to multiples of the window, not to the first refusal", () => {
    const counter = createRejectionCounter(100);
    const caller = digest(2);
    // 60 refusals at the end of one window and 60 at the start of the next: neither passes 100.
    expect(refuse(counter, caller, "default", 60, (i) => W0 + WINDOW_MS - 60 + i)).toEqual([]);
    expect(refuse(counter, caller, "default", 60, (i) => W0 + WINDOW_MS + i)).toEqual([]);
    // The next 41 in the same window pass it, counted from the window's start.
    const events = refuse(counter, caller, "default", 41, (i) => W0 + WINDOW_MS + 1_000 + i);
    expect(events.map((e) => e.event)).toEqual([{ callerKey: caller, category: "default", count: 101, windowStartMs: W0 + WINDOW_MS }]);
  });

  it("counts callers and categories apart", () => {
    const counter = createRejectionCounter(100);
    const events: SustainedEvent[] = [];
    for (let i = 0; i < 101; i++) {
      for (const [caller, category] of [
        [digest(3), "upload"],
        [digest(3), "download"],
        [digest(4), "upload"],
      ] as const) {
        const event = counter.record(caller, category, W0 + i, THRESHOLD, WINDOW_MS);
        if (event !== null) events.push(event);
      }
    }
    expect(events).toEqual([
      { callerKey: digest(3), category: "upload", count: 101, windowStartMs: W0 },
      { callerKey: digest(3), category: "download", count: 101, windowStartMs: W0 },
      { callerKey: digest(4), category: "upload", count: 101, windowStartMs: W0 },
    ]);
    // 100 refusals of a fourth pair stay below the threshold.
    expect(refuse(counter, digest(5), "upload", 100, (i) => W0 + i)).toEqual([]);
  });

  it("keeps no two pairs in one slot when a category ends like another begins", () => {
    const counter = createRejectionCounter(100);
    expect(refuse(counter, "bc", "a", 100, () => W0)).toEqual([]);
    // ("ab", "c") must not share ("a", "bc")'s count.
    expect(refuse(counter, "c", "ab", 1, () => W0)).toEqual([]);
    expect(refuse(counter, "bc", "a", 1, () => W0)).toHaveLength(1);
  });

  it("stays within its bound under a flood of 100,000 distinct callers, still reporting a caller refused throughout", () => {
    const counter = createRejectionCounter(1_000);
    const noisy = digest(0xfeed);
    const events: SustainedEvent[] = [];
    let largest = 0;
    for (let i = 0; i < 100_000; i++) {
      const atMs = W0 + Math.floor(i / 2_000);
      const event = counter.record(digest(i + 1_000_000), "default", atMs, THRESHOLD, WINDOW_MS);
      if (event !== null) events.push(event);
      if (i % 500 === 0) {
        const e = counter.record(noisy, "default", atMs, THRESHOLD, WINDOW_MS);
        if (e !== null) events.push(e);
      }
      largest = Math.max(largest, counter.size);
    }
    expect(largest).toBe(1_000);
    // Each flood caller was refused once; the noisy one 200 times in one window.
    expect(events).toEqual([{ callerKey: noisy, category: "default", count: 101, windowStartMs: W0 }]);
    // Full, less at most the batch (1/64) the last eviction freed.
    expect(counter.size).toBeGreaterThan(1_000 - 1_000 / 64);
    expect(counter.size).toBeLessThanOrEqual(1_000);
  });

  it("drops callers of past windows before current ones when full", () => {
    const counter = createRejectionCounter(3);
    const current = digest(6);
    expect(refuse(counter, digest(7), "default", 1, () => W0)).toEqual([]);
    expect(refuse(counter, digest(8), "default", 1, () => W0)).toEqual([]);
    expect(refuse(counter, current, "default", 100, () => W0 + WINDOW_MS)).toEqual([]);
    // A new caller in the current window takes a past window's slot, not `current`'s.
    expect(refuse(counter, digest(9), "default", 1, () => W0 + WINDOW_MS)).toEqual([]);
    expect(counter.size).toBeLessThanOrEqual(3);
    expect(refuse(counter, current, "default", 1, () => W0 + WINDOW_MS + 1)).toHaveLength(1);
  });

  it("ignores a refusal timed before the caller's window, and a threshold or window that is not positive", () => {
    const counter = createRejectionCounter(10);
    const caller = digest(10);
    expect(refuse(counter, caller, "default", 100, () => W0 + WINDOW_MS)).toEqual([]);
    expect(refuse(counter, caller, "default", 5, () => W0)).toEqual([]);
    expect(refuse(counter, caller, "default", 1, () => W0 + WINDOW_MS)).toHaveLength(1);
    expect(counter.record(caller, "default", W0, THRESHOLD, 0)).toBeNull();
    expect(counter.record(caller, "default", W0, THRESHOLD, Number.NaN)).toBeNull();
    expect(counter.record(caller, "default", Number.NaN, THRESHOLD, WINDOW_MS)).toBeNull();
    expect(counter.record(caller, "default", W0, 0, WINDOW_MS)).toBeNull();
  });

  it("offers one counter for rate-limit refusals and another for auth failures", () => {
    const caller = digest(11);
    for (let i = 0; i < 100; i++) rateLimitRejections.record(caller, "default", W0, THRESHOLD, WINDOW_MS);
    expect(authFailureRejections.record(caller, "default", W0, THRESHOLD, WINDOW_MS)).toBeNull();
    expect(rateLimitRejections.record(caller, "default", W0, THRESHOLD, WINDOW_MS)).not.toBeNull();
  });
});

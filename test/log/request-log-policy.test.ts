// The request log's modes and its per-second refusal cap
// (src/log/request-log-policy.ts), with the clock, the random draw, the timer
// and the writer held by the test.
import { describe, expect, it } from "vitest";
import { RequestLogPolicy, type RequestLogMode } from "../../src/log/request-log-policy";

interface Held {
  policy: RequestLogPolicy;
  lines: string[];
  timers: { ms: number; fn: () => Promise<void> }[];
}

function held(mode: RequestLogMode, options: { sample?: number; refusalsPerS?: number; random?: () => number; names?: (keys: readonly string[]) => Promise<readonly string[]> | readonly string[] } = {}): Held {
  const lines: string[] = [];
  const timers: { ms: number; fn: () => Promise<void> }[] = [];
  const policy = new RequestLogPolicy({
    mode,
    sample: options.sample ?? 0.1,
    refusalsPerS: options.refusalsPerS ?? 50,
    write: (line) => lines.push(line),
    nameCallers: options.names ?? ((keys) => keys.map((k) => (k.startsWith("ip:") ? `hmac:${k.length}` : k))),
    random: options.random,
    later: (ms, fn) => timers.push({ ms, fn }),
  });
  return { policy, lines, timers };
}

/** A refusal as the gateway makes one: the policy's answer, and the line written when it says so. */
function refuse(h: Held, decision: string, caller: string, nowMs: number): void {
  if (h.policy.refusal(decision, caller, nowMs, null)) h.lines.push(JSON.stringify({ event: "request", decision }));
}

function summaries(lines: readonly string[]): Record<string, unknown>[] {
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === "refusals_summarised");
}

const T0 = 1_800_000_000_000;

describe("the refusal cap", () => {
  it("writes at most 51 lines for a flood of 1,000 refusals in one second, and loses none from the counts", async () => {
    const h = held("all");
    const decisions = ["rate_limited", "invalid_credential", "auth_failures"];
    for (let i = 0; i < 1000; i++) refuse(h, decisions[i % 3]!, i % 2 === 0 ? "key:hot" : `ip:198.51.100.${i % 200}`, T0 + (i % 1000));
    // The second's end: its timer writes the summary.
    expect(h.timers).toHaveLength(1);
    expect(h.timers[0]!.ms).toBe(1000 - 50);
    h.timers[0]!.fn();
    await Promise.resolve();
    expect(h.lines).toHaveLength(51);
    const [summary] = summaries(h.lines);
    expect(summary).toMatchObject({ level: "info", at_unix_ms: T0 + 1000, window_start_unix_ms: T0, window_s: 1, logged: 50, summarised: 950 });
    const byDecision = summary!.by_decision as Record<string, number>;
    const individually = h.lines.map((l) => JSON.parse(l) as { event: string; decision: string }).filter((l) => l.event === "request");
    for (const d of decisions) expect(byDecision[d]! + individually.filter((l) => l.decision === d).length).toBe(Math.ceil((1000 - decisions.indexOf(d)) / 3));
    expect(Object.values(byDecision).reduce((a, b) => a + b, 0) + (summary!.logged as number)).toBe(1000);
    // Half the flood came from one key: it leads the top callers with its exact count (it never left the counters).
    const top = Object.entries(summary!.top_callers as Record<string, number>);
    expect(top[0]).toEqual(["key:hot", 475]);
    expect(top.length).toBeLessThanOrEqual(5);
    // Addresses only as the names nameCallers gave.
    expect(h.lines.join("\n")).not.toMatch(/198\.51\.100/);
  });

  it("writes the summary with the next second's first refusal when no timer has fired, and starts that second afresh", async () => {
    const h = held("refusals", { refusalsPerS: 2 });
    for (let i = 0; i < 5; i++) refuse(h, "rate_limited", "key:a", T0 + 10);
    expect(h.lines).toHaveLength(2);
    refuse(h, "rate_limited", "key:a", T0 + 1000);
    await Promise.resolve();
    expect(summaries(h.lines)).toEqual([expect.objectContaining({ window_start_unix_ms: T0, logged: 2, summarised: 3, by_decision: { rate_limited: 3 }, top_callers: { "key:a": 3 } })]);
    // The new second's own line, and the old second's timer finds nothing left to write.
    expect(h.lines).toHaveLength(4);
    h.timers[0]!.fn();
    await Promise.resolve();
    expect(h.lines).toHaveLength(4);
  });

  it("never reopens a second once a later one has begun: an older refusal counts in the current second, under its cap", async () => {
    const h = held("all", { refusalsPerS: 2 });
    for (let i = 0; i < 3; i++) refuse(h, "rate_limited", "key:a", T0 + 1000);
    expect(h.lines).toHaveLength(2);
    // A refusal stamped with the second before (a clock that stepped back): no new window, no third line, no summary yet.
    expect(h.policy.refusal("rate_limited", "key:b", T0 + 999, null)).toBe(false);
    expect(h.lines).toHaveLength(2);
    await h.policy.flush();
    expect(summaries(h.lines)).toEqual([expect.objectContaining({ window_start_unix_ms: T0 + 1000, logged: 2, summarised: 2, top_callers: { "key:a": 1, "key:b": 1 } })]);
  });

  it("keeps the second's cap when its timer fires before the clock moves on", async () => {
    const h = held("all", { refusalsPerS: 3 });
    for (let i = 0; i < 10; i++) refuse(h, "rate_limited", "key:a", T0);
    h.timers[0]!.fn();
    for (let i = 0; i < 10; i++) refuse(h, "rate_limited", "key:a", T0 + 999);
    // One timer per second: the rest waits for the next second's first refusal.
    expect(h.timers).toHaveLength(1);
    refuse(h, "rate_limited", "key:a", T0 + 1000);
    await Promise.resolve();
    const s = summaries(h.lines);
    expect(h.lines).toHaveLength(3 + 2 + 1);
    expect(s.map((x) => x.summarised)).toEqual([7, 10]);
  });

  it("counts top callers in bounded memory: a caller with a large share is always named", async () => {
    const h = held("all", { refusalsPerS: 0 });
    for (let i = 0; i < 5000; i++) refuse(h, "invalid_credential", i % 10 === 0 ? "ip:203.0.113.1" : `ip:10.0.${i >> 8}.${i & 255}`, T0 + 1);
    await h.policy.flush();
    const [summary] = summaries(h.lines);
    expect(summary!.summarised).toBe(5000);
    const top = summary!.top_callers as Record<string, number>;
    // The heavy caller has 500 of 5,000 (> 1/TOP_CALLER_SLOTS): Space-Saving keeps it, counted at least as often as it was.
    expect(Object.keys(top)[0]).toBe(`hmac:${"ip:203.0.113.1".length}`);
    expect(Object.values(top)[0]).toBeGreaterThanOrEqual(500);
  });

  it("keeps the counts when the callers cannot be named", async () => {
    const h = held("all", { refusalsPerS: 1, names: () => Promise.reject(new Error("no key")) });
    for (let i = 0; i < 4; i++) refuse(h, "rate_limited", "ip:192.0.2.1", T0);
    await h.policy.flush();
    const [summary] = summaries(h.lines);
    expect(summary).toMatchObject({ summarised: 3, by_decision: { rate_limited: 3 }, top_callers: {}, top_callers_unavailable: true });
    expect(h.lines.join("")).not.toContain("192.0.2.1");
  });
});

describe("the modes", () => {
  it("all: every admitted line", () => {
    const h = held("all");
    expect([h.policy.admitted(), h.policy.admitted()]).toEqual([true, true]);
  });

  it("refusals: no admitted line, refusals within the cap", () => {
    const h = held("refusals");
    expect(h.policy.admitted()).toBe(false);
    expect(h.policy.refusal("rate_limited", "key:a", T0, null)).toBe(true);
  });

  it("sampled: an admitted line when the draw falls under request_log_sample, refusals as in all", () => {
    const draws = [0.05, 0.25, 0.2499, 0.9];
    const h = held("sampled", { sample: 0.25, random: () => draws.shift()! });
    expect([h.policy.admitted(), h.policy.admitted(), h.policy.admitted(), h.policy.admitted()]).toEqual([true, false, true, false]);
    expect(h.policy.refusal("rate_limited", "key:a", T0, null)).toBe(true);
  });

  it("off: nothing, and no summary", async () => {
    const h = held("off");
    expect(h.policy.admitted()).toBe(false);
    for (let i = 0; i < 100; i++) expect(h.policy.refusal("rate_limited", "key:a", T0, null)).toBe(false);
    await h.policy.flush();
    expect(h.lines).toEqual([]);
    expect(h.timers).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import { admit, type Charge, wouldAdmit } from "../../src/engine/gcra";
import { compileLimits } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";


const FIVE_PER_SECOND = compileLimits([{ count: 5, window_s: 1 }]);

function charge(subject: string, cost = 1, limits = FIVE_PER_SECOND): Charge {
  return { subject, category: "auth_failures", limits, cost };
}

describe("wouldAdmit", () => {
  it("answers as admit would, without charging anything", () => {
    const table = new LimiterTable(1, { seed: 7 });
    const nowMs = 1_000_000;
    for (let i = 0; i < 100; i++) expect(wouldAdmit(table, [charge("authfail:a")], nowMs).allowed).toBe(true);
    expect(table.liveEntries(nowMs)).toBe(0);
    for (let i = 0; i < 5; i++) expect(admit(table, [charge("authfail:a")], nowMs).allowed).toBe(true);
    const peeked = wouldAdmit(table, [charge("authfail:a")], nowMs);
    const admitted = admit(table, [charge("authfail:a")], nowMs);
    expect(peeked).toEqual(admitted);
    expect(peeked).toMatchObject({ allowed: false, retryAfterMs: 200, deniedChargeIndex: 0 });
  });

  it("admits again exactly when the retry delay has passed, and not 1 ms before", () => {
    const table = new LimiterTable(1, { seed: 7 });
    const nowMs = 5_000;
    for (let i = 0; i < 5; i++) admit(table, [charge("authfail:b")], nowMs);
    const { retryAfterMs } = wouldAdmit(table, [charge("authfail:b")], nowMs);
    expect(wouldAdmit(table, [charge("authfail:b")], nowMs + retryAfterMs - 1).allowed).toBe(false);
    expect(wouldAdmit(table, [charge("authfail:b")], nowMs + retryAfterMs).allowed).toBe(true);
  });

  it("reports the same tightest limit as admit for an allowed spend", () => {
    const table = new LimiterTable(1, { seed: 7 });
    const limits = compileLimits([{ count: 5, window_s: 1 }, { count: 100, window_s: 60 }]);
    admit(table, [charge("authfail:c", 2, limits)], 10_000);
    const peeked = wouldAdmit(table, [charge("authfail:c", 1, limits)], 10_100);
    const admitted = admit(table, [charge("authfail:c", 1, limits)], 10_100);
    expect(peeked).toEqual(admitted);
  });

  it("treats a repeated key as admit does, and admits unmetered charges", () => {
    const table = new LimiterTable(1, { seed: 7 });
    // A key repeated in one call is one spend of the summed cost, in both.
    const twice = [charge("authfail:d", 3), charge("authfail:d", 3)];
    expect(wouldAdmit(table, [charge("authfail:d", 4)], 0).allowed).toBe(true);
    admit(table, [charge("authfail:d", 4)], 0);
    const peeked = wouldAdmit(table, twice, 0);
    expect(peeked.allowed).toBe(false);
    expect(peeked).toEqual(admit(table, twice, 0));
    expect(wouldAdmit(table, [charge("authfail:d", 0), charge("x", 1, [])], 0)).toMatchObject({ allowed: true, tightest: null });
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { admit, type Charge } from "../../src/engine/gcra";
import { compileLimit, compileLimits, type Limit } from "../../src/engine/limit";
import { LimiterTable } from "../../src/engine/limiter-table";
import { chargeDebt, refund, type SettleCharge } from "../../src/proxy/response-cost-gcra";
import { MAX_RESPONSE_COST } from "../../src/proxy/response-cost-result";
import { SettleModel } from "./reference-settle";

const KEY = "key:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
const TENANT = "tenant:acme";

function spend(limits: readonly Limit[], cost: number, subject = KEY): Charge[] {
  return [{ subject, category: "tokens", limits, cost }];
}

function settlement(limits: readonly Limit[], units: number, subject = KEY): SettleCharge[] {
  return [{ subject, category: "tokens", limits, units }];
}

describe("chargeDebt", () => {
  // 100 tokens per 60 s: T = 600 ms, burst 100 (B·T = 60 s).
  const limits = compileLimits([{ count: 100, window_s: 60 }]);

  it("charges past the burst, and the next spend waits exactly until the debt is earned back", () => {
    const table = new LimiterTable(1, { seed: 1 });
    expect(admit(table, spend(limits, 10), 0).allowed).toBe(true);
    // Actual cost 250: 240 more. TAT = 250 × 600 ms = 150 s; a spend of 1 fits when TAT + T − t ≤ B·T.
    const settled = chargeDebt(table, settlement(limits, 240), 0);
    expect(settled.retryAfterMs).toBe(90_600);
    expect(settled.tightest).toMatchObject({ chargeIndex: 0, remaining: 0, resetMs: 150_000 });
    const denied = admit(table, spend(limits, 1), 0);
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 90_600 });
    expect(admit(table, spend(limits, 1), 90_599).allowed).toBe(false);
    expect(admit(table, spend(limits, 1), 90_600).allowed).toBe(true);
  });

  it("creates state for a caller with none, and charges every limit and subject it is given", () => {
    const table = new LimiterTable(1, { seed: 2 });
    const both = compileLimits([
      { count: 100, window_s: 60 },
      { count: 1000, window_s: 3600 },
    ]);
    const settled = chargeDebt(
      table,
      [
        { subject: KEY, category: "tokens", limits: both, units: 50 },
        { subject: TENANT, category: "tokens", limits: both, units: 50 },
      ],
      1_000,
    );
    expect(settled.tightest).toMatchObject({ remaining: 50, resetMs: 30_000, chargeIndex: 0 });
    expect(admit(table, spend(both, 51), 1_000)).toMatchObject({ allowed: false });
    expect(admit(table, spend(both, 51, TENANT), 1_000)).toMatchObject({ allowed: false });
    expect(admit(table, spend(both, 50, TENANT), 1_000).allowed).toBe(true);
  });

  it("charges a shadow limit too, but never names it in the figures nor waits for it (found by the contract fuzz)", () => {
    const table = new LimiterTable(1, { seed: 4 });
    // The shadow limit runs out first: 10 per 60 s against the enforced 100 per 60 s.
    const mixed = compileLimits([
      { count: 100, window_s: 60 },
      { count: 10, window_s: 30, shadow: true },
    ]);
    const settled = chargeDebt(table, settlement(mixed, 20), 0);
    expect(settled.tightest).toMatchObject({ remaining: 80, resetMs: 12_000, chargeIndex: 0 });
    expect(settled.tightest?.limit.shadow).toBe(false);
    expect(settled.retryAfterMs).toBe(0);
    // It was charged all the same: alone, the shadow limit refuses the next spend.
    expect(admit(table, spend([compileLimit({ count: 10, window_s: 30 })], 1), 0).allowed).toBe(false);
    // And figures of 0 units (figuresNow) read the enforced one as well.
    expect(chargeDebt(table, settlement(mixed, 0), 0).tightest).toMatchObject({ remaining: 80 });
  });

  it("holds a debt of MAX_RESPONSE_COST on the slowest limit the engine accepts, capped where it stays exact", () => {
    const table = new LimiterTable(1, { seed: 3 });
    const slow = [compileLimit({ count: 7, window_s: 31_622_400, burst: 1 })];
    const model = new SettleModel();
    const settled = chargeDebt(table, settlement(slow, MAX_RESPONSE_COST), 5);
    expect(settled).toEqual(model.debt(settlement(slow, MAX_RESPONSE_COST), 5));
    expect(admit(table, spend(slow, 1), 5)).toMatchObject(model.admit(spend(slow, 1), 5));
    expect(settled.retryAfterMs).toBeGreaterThan(0);
  });
});

describe("refund", () => {
  // 1000 tokens per minute: T = 60 ms.
  const limits = compileLimits([{ count: 1000, window_s: 60 }]);

  it("gives back what the reserve overcharged", () => {
    const table = new LimiterTable(1, { seed: 4 });
    expect(admit(table, spend(limits, 500), 0).allowed).toBe(true);
    expect(admit(table, spend(limits, 500), 0).allowed).toBe(true);
    expect(admit(table, spend(limits, 1), 0).allowed).toBe(false);
    // The first call used 120 of its 500: 380 back. 620 used, so 380 fit and 381 do not.
    const settled = refund(table, settlement(limits, 380), 0);
    expect(settled.tightest).toMatchObject({ remaining: 380, resetMs: 37_200 });
    expect(admit(table, spend(limits, 381), 0).allowed).toBe(false);
    expect(admit(table, spend(limits, 380), 0).allowed).toBe(true);
  });

  it("never moves a state before now, and gives nothing to a state already earned back", () => {
    const table = new LimiterTable(1, { seed: 5 });
    expect(admit(table, spend(limits, 10), 0).allowed).toBe(true);
    // More back than is left: the state is simply earned back.
    expect(refund(table, settlement(limits, 400), 0)).toEqual({ tightest: { chargeIndex: 0, limit: limits[0], remaining: 1000, resetMs: 0 }, retryAfterMs: 0 });
    expect(admit(table, spend(limits, 1000), 0).allowed).toBe(true);
    expect(admit(table, spend(limits, 1), 0).allowed).toBe(false);
    // An hour later everything is earned back: a refund adds no credit.
    expect(refund(table, settlement(limits, 500), 3_600_000).tightest).toMatchObject({ remaining: 1000, resetMs: 0 });
    expect(admit(table, spend(limits, 1000), 3_600_000).allowed).toBe(true);
    expect(admit(table, spend(limits, 1), 3_600_000).allowed).toBe(false);
  });

  it("refuses units that are not a whole number", () => {
    const table = new LimiterTable(1, { seed: 6 });
    expect(() => refund(table, settlement(limits, 1.5), 0)).toThrow(RangeError);
    expect(() => chargeDebt(table, settlement(limits, -1), 0)).toThrow(RangeError);
  });
});

// ---------------------------------------------------------------- property

const limitArb: fc.Arbitrary<Limit> = fc.oneof(
  fc
    .record({ count: fc.integer({ min: 1, max: 40 }), windowMs: fc.constantFrom(7, 100, 999, 1000, 1001, 60_000, 3_600_000), burst: fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }) })
    .map(({ count, windowMs, burst }) => compileLimit({ count, window_s: windowMs / 1000, ...(burst === undefined ? {} : { burst }) })),
  // The slowest limits, where a large debt reaches the cap.
  fc.constantFrom(compileLimit({ count: 7, window_s: 31_622_400, burst: 1 }), compileLimit({ count: 100_000, window_s: 60 })),
);
const unitsArb = fc.oneof(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: MAX_RESPONSE_COST }));
const stepArb = fc.record({
  advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 10_000_000 })),
  kind: fc.constantFrom("admit", "debt", "refund"),
  subject: fc.constantFrom(KEY, TENANT),
  cost: fc.integer({ min: 0, max: 40 }),
  units: unitsArb,
});

describe("settlement properties", () => {
  it("debts, refunds and admissions match the BigInt model", () => {
    fc.assert(
      fc.property(fc.array(limitArb, { minLength: 1, maxLength: 3 }), fc.integer({ min: 0, max: 2 ** 40 }), fc.array(stepArb, { minLength: 1, maxLength: 60 }), (specs, startMs, steps) => {
        const limits = compileLimits(specs.map((l) => ({ count: l.count, window_s: l.windowS, burst: l.burst })));
        const table = new LimiterTable(1, { seed: 7 });
        const model = new SettleModel();
        let nowMs = startMs;
        for (const step of steps) {
          nowMs += step.advanceMs;
          if (step.kind === "admit") {
            const decision = admit(table, spend(limits, step.cost, step.subject), nowMs);
            expect({ allowed: decision.allowed, retryAfterMs: decision.retryAfterMs }).toEqual(model.admit(spend(limits, step.cost, step.subject), nowMs));
          } else {
            const move = step.kind === "debt" ? chargeDebt : refund;
            const expected = step.kind === "debt" ? model.debt(settlement(limits, step.units, step.subject), nowMs) : model.refund(settlement(limits, step.units, step.subject), nowMs);
            expect(move(table, settlement(limits, step.units, step.subject), nowMs)).toEqual(expected);
          }
        }
      }),
      { numRuns: 400 },
    );
  });
});

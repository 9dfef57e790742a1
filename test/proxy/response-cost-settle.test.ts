import { describe, expect, it } from "vitest";
import { meteredUnits, settlementFor } from "../../src/proxy/response-cost-settle";

describe("settlementFor", () => {
  it.each([
    [500, { found: true, cost: 1200 }, { kind: "debt", units: 700 }],
    [500, { found: true, cost: 120 }, { kind: "refund", units: 380 }],
    [500, { found: true, cost: 0 }, { kind: "refund", units: 500 }],
    [0, { found: true, cost: 40 }, { kind: "debt", units: 40 }],
    [500, { found: true, cost: 500 }, { kind: "none" }],
    [500, { found: false, reason: "absent" }, { kind: "none" }],
    [500, { found: false, reason: "malformed" }, { kind: "none" }],
    [500, { found: false, reason: "too_large" }, { kind: "none" }],
    [500, { found: false, reason: "aborted" }, { kind: "none" }],
  ] as const)("reserve %i and %j settle as %j", (reserve, result, expected) => {
    expect(settlementFor(reserve, result)).toEqual(expected);
  });
});

describe("meteredUnits", () => {
  it("meters the actual cost, or the reserve that stands", () => {
    expect(meteredUnits(500, { found: true, cost: 1200 })).toBe(1200);
    expect(meteredUnits(500, { found: true, cost: 0 })).toBe(0);
    expect(meteredUnits(500, { found: false, reason: "aborted" })).toBe(500);
  });
});

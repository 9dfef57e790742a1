import { describe, expect, it } from "vitest";
import { compileLimit, compileLimits, limitError, limitListError } from "../../src/engine/limit";

describe("limitError", () => {
  it.each([
    [{ count: 5, window_s: 5 }],
    [{ count: 1000, window_s: 1, burst: 2000 }],
    [{ count: 3, window_s: 0.25 }],
    [{ count: 1, window_s: 0.001 }],
    [{ count: 200_000, window_s: 3600 }],
    [{ count: 1, window_s: 31_622_400 }],
    [{ count: 1_000_000_000, window_s: 1, burst: 1_000_000_000 }],
    [{ count: 5, window_s: 5, scope: "isolate" }],
    [{ count: 5, window_s: 5, scope: "global" }],
  ])("accepts %j", (spec) => {
    expect(limitError(spec)).toBeNull();
  });

  it.each([
    [null, "a limit must be an object"],
    [[5, 5], "a limit must be an object"],
    [{ window_s: 5 }, "count must be a whole number > 0"],
    [{ count: 0, window_s: 5 }, "count must be a whole number > 0"],
    [{ count: -1, window_s: 5 }, "count must be a whole number > 0"],
    [{ count: 1.5, window_s: 5 }, "count must be a whole number > 0"],
    [{ count: "5", window_s: 5 }, "count must be a whole number > 0"],
    [{ count: Number.NaN, window_s: 5 }, "count must be a whole number > 0"],
    [{ count: Number.POSITIVE_INFINITY, window_s: 5 }, "count must be a whole number > 0"],
    [{ count: 2_000_000_000, window_s: 5 }, "count must be a whole number > 0 and <= 1000000000"],
    [{ count: 5 }, "window_s must be a finite number of seconds > 0"],
    [{ count: 5, window_s: 0 }, "window_s must be a finite number of seconds > 0"],
    [{ count: 5, window_s: -5 }, "window_s must be a finite number of seconds > 0"],
    [{ count: 5, window_s: Number.POSITIVE_INFINITY }, "window_s must be a finite number of seconds > 0"],
    [{ count: 5, window_s: Number.NaN }, "window_s must be a finite number of seconds > 0"],
    [{ count: 5, window_s: 0.0001 }, "window_s must be a whole number of milliseconds"],
    [{ count: 5, window_s: 1.0005 }, "window_s must be a whole number of milliseconds"],
    [{ count: 5, window_s: 40_000_000 }, "window_s must be <= 31622400"],
    [{ count: 5, window_s: 5, burst: 0 }, "burst must be a whole number > 0"],
    [{ count: 5, window_s: 5, burst: 2.5 }, "burst must be a whole number > 0"],
    [{ count: 5, window_s: 5, burst: null }, "burst must be a whole number > 0"],
    [{ count: 5, window_s: 5, scope: "cluster" }, 'scope must be "isolate" or "global"'],
    [{ count: 5, window_s: 5, scpoe: "global" }, "scpoe is not a known limit field"],
    [{ count: 999_999_937, window_s: 31_536_000, burst: 1_000_000_000 }, "burst × window_s is too large to meter exactly"],
  ])("refuses %j, naming the field", (spec, reason) => {
    expect(limitError(spec)).toContain(reason);
  });
});

describe("compileLimit", () => {
  it("keeps T = W/C exact as whole units: 3 per 1000 ms is 1000 units of 1/3 ms", () => {
    const limit = compileLimit({ count: 3, window_s: 1 });
    expect(limit).toMatchObject({ count: 3, windowS: 1, burst: 3, windowMs: 1000, unitsPerMs: 3, intervalUnits: 1000, toleranceUnits: 3000 });
  });

  it("meters in whole milliseconds when T is a whole number of them", () => {
    expect(compileLimit({ count: 6000, window_s: 60 })).toMatchObject({ unitsPerMs: 1, intervalUnits: 10, toleranceUnits: 60_000 });
    expect(compileLimit({ count: 1000, window_s: 1, burst: 2000 })).toMatchObject({ unitsPerMs: 1, intervalUnits: 1, toleranceUnits: 2000 });
  });

  it("carries its scope: as written, else the default it is compiled with", () => {
    expect(compileLimit({ count: 5, window_s: 5 }).scope).toBe("isolate");
    expect(compileLimit({ count: 5, window_s: 5 }, "global").scope).toBe("global");
    expect(compileLimit({ count: 5, window_s: 5, scope: "isolate" }, "global").scope).toBe("isolate");
    expect(compileLimits([{ count: 5, window_s: 5 }, { count: 5, window_s: 5, scope: "global" }]).map((l) => l.scope)).toEqual(["isolate", "global"]);
  });

  it("gives a global limit metered in the isolate a state apart from an isolate limit of the same figures", () => {
    const a = compileLimit({ count: 5, window_s: 5 });
    const b = compileLimit({ count: 5, window_s: 5, scope: "global" });
    expect([a.keySaltA, a.keySaltB]).not.toEqual([b.keySaltA, b.keySaltB]);
  });

  it("gives different keys to limits that differ only in burst", () => {
    const a = compileLimit({ count: 5, window_s: 5 });
    const b = compileLimit({ count: 5, window_s: 5, burst: 6 });
    expect([a.keySaltA, a.keySaltB]).not.toEqual([b.keySaltA, b.keySaltB]);
  });

  it("throws on an invalid spec", () => {
    expect(() => compileLimit({ count: 0, window_s: 1 })).toThrow(/count/);
  });
});

describe("compileLimits", () => {
  it("compiles up to three limits and keeps a repeated limit once", () => {
    const limits = compileLimits([
      { count: 5, window_s: 1 },
      { count: 100, window_s: 60 },
      { count: 5, window_s: 1, burst: 5 },
    ]);
    expect(limits.map((l) => [l.count, l.windowS])).toEqual([
      [5, 1],
      [100, 60],
    ]);
    expect(Object.isFrozen(limits)).toBe(true);
  });

  it("refuses more than three limits, and names the bad entry", () => {
    const four = [1, 2, 3, 4].map((count) => ({ count, window_s: 1 }));
    expect(limitListError(four)).toBe("at most 3 limits per list (and 3 shadow ones beside them)");
    expect(() => compileLimits(four)).toThrow(/at most 3/);
    expect(limitListError([{ count: 1, window_s: 1 }, { count: 0, window_s: 1 }])).toMatch(/^\[1\]: count/);
    expect(limitListError({})).toBe("limits must be a list");
  });
});

// A route's `charge_on_status` list: codes 100–599 and classes "1xx".."5xx",
// each class exactly its hundred codes.
import { describe, expect, it } from "vitest";
import { parseStatusSet, statusMatches, type StatusSet } from "../../src/engine/status-match";

function setOf(value: unknown): StatusSet {
  const parsed = parseStatusSet(value);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.set;
}

/** Every status 0–700 the set names. */
function matched(set: StatusSet): number[] {
  const out: number[] = [];
  for (let status = 0; status <= 700; status++) if (statusMatches(set, status)) out.push(status);
  return out;
}

describe("charge_on_status statuses", () => {
  it('covers exactly 400–499 with the class "4xx"', () => {
    const codes = matched(setOf(["4xx"]));
    expect(codes).toHaveLength(100);
    expect(codes[0]).toBe(400);
    expect(codes.at(-1)).toBe(499);
  });

  it("covers each class's hundred codes and a listed code alone", () => {
    expect(matched(setOf(["1xx", "5xx"]))).toEqual([...Array.from({ length: 100 }, (_, i) => 100 + i), ...Array.from({ length: 100 }, (_, i) => 500 + i)]);
    expect(matched(setOf([401, 429]))).toEqual([401, 429]);
  });

  it("accepts codes 100 and 599, and refuses 99, 600, fractions and other spellings of a class, naming the entry", () => {
    expect(matched(setOf([100, 599]))).toEqual([100, 599]);
    for (const [value, index] of [
      [[99], 0],
      [[401, 600], 1],
      [[401.5], 0],
      [["4xxx"], 0],
      [["44xx"], 0],
      [["6xx"], 0],
      [["0xx"], 0],
      [["4XX"], 0],
      [[" 4xx"], 0],
    ] as const) {
      const parsed = parseStatusSet(value);
      expect(parsed.ok, JSON.stringify(value)).toBe(false);
      if (!parsed.ok) expect(parsed.index).toBe(index);
    }
  });

  it("refuses an empty list and one of more than 100 entries", () => {
    expect(parseStatusSet([]).ok).toBe(false);
    expect(parseStatusSet(Array.from({ length: 101 }, () => 500)).ok).toBe(false);
    expect(parseStatusSet(Array.from({ length: 100 }, () => 500)).ok).toBe(true);
    expect(parseStatusSet("4xx").ok).toBe(false);
  });
});

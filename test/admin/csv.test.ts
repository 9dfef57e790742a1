import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { csvInteger, csvRecord, csvText, startsFormula } from "../../src/admin/csv";

/** The inverse of csvText for one quoted cell. */
function unquote(cell: string): string {
  expect(cell.startsWith('"') && cell.endsWith('"')).toBe(true);
  const inner = cell.slice(1, -1);
  expect(inner.replaceAll('""', "")).not.toContain('"');
  return inner.replaceAll('""', '"');
}

describe("startsFormula", () => {
  it.each(['=1+2";=1+2', "+SUM(1)", "-2", "@A1", "\t=1", "\r=1", "\n=1", "\uFF1D1", "\uFF0BSUM(1)", "\uFF0D2", "\uFF20A1", "  =1", " -1", "\u00A0=1", "\u3000=1", " \uFF1D1", "=", "  \t"])(
    "treats %j as a formula",
    (text) => {
      expect(startsFormula(text)).toBe(true);
    },
  );

  it.each(["", " ", "acme", "a=1", "1-2", "'=1", " x", "2026-07", "bytes_in", "\u200B=1"])("treats %j as text", (text) => {
    expect(startsFormula(text)).toBe(false);
  });
});

describe("csvText", () => {
  it("quotes every cell and doubles its quotes", () => {
    expect(csvText("acme")).toBe('"acme"');
    expect(csvText("")).toBe('""');
    expect(csvText('say "hi", then\r\nleave')).toBe('"say ""hi"", then\r\nleave"');
  });

  it("puts the ' inside the quotes and keeps the rest of the cell as written", () => {
    expect(csvText('=1+2";=1+2')).toBe('"\'=1+2"";=1+2"');
    expect(csvText("\uFF1D1")).toBe('"\'\uFF1D1"');
    expect(csvText("  =1")).toBe('"\'  =1"');
    expect(csvText("\t=1")).toBe('"\'\t=1"');
  });

  it("round-trips any string to itself, or to ' and itself exactly when it starts a formula", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme-composite" }), (text) => {
        const back = unquote(csvText(text));
        expect(back).toBe(startsFormula(text) ? `'${text}` : text);
      }),
    );
  });
});

describe("csvInteger", () => {
  it("writes safe integers bare, digit for digit, negatives included", () => {
    expect(csvInteger(-2)).toBe("-2");
    expect(csvInteger(0)).toBe("0");
    expect(csvInteger(Number.MAX_SAFE_INTEGER)).toBe("9007199254740991");
    expect(csvInteger(Number.MIN_SAFE_INTEGER)).toBe("-9007199254740991");
  });

  it("writes what is not a safe integer as a quoted text cell, not a rewritten number", () => {
    expect(csvInteger(1.5)).toBe('"1.5"');
    expect(csvInteger(2 ** 60)).toBe('"1152921504606847000"');
    expect(csvInteger(-0.5)).toBe('"\'-0.5"');
  });
});

describe("csvRecord", () => {
  it("joins cells with commas and ends the record with CRLF", () => {
    expect(csvRecord(["acme", "2026-07", "requests", -2])).toBe('"acme","2026-07","requests",-2\r\n');
    expect(csvRecord(["-2", -2])).toBe('"\'-2",-2\r\n');
  });
});

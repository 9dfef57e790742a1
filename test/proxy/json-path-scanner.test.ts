import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compileJsonPath } from "../../src/proxy/json-path";
import { JsonPathScanner, MAX_JSON_DEPTH, SCAN_ABSENT, SCAN_COST, SCAN_INVALID, SCAN_TOO_LARGE, SCAN_UNUSABLE, type ScanOutcome } from "../../src/proxy/json-path-scanner";
import { type CostResult, costOfNumber, MAX_RESPONSE_COST } from "../../src/proxy/response-cost-result";
import { referenceJsonCost } from "./cost-reference";
import { bytes, splitAt } from "./streams";

const MIB = 1024 * 1024;

function resultOf(scanner: JsonPathScanner, outcome: ScanOutcome): CostResult {
  if (outcome === SCAN_COST) return { found: true, cost: scanner.cost };
  if (outcome === SCAN_ABSENT) return { found: false, reason: "absent" };
  if (outcome === SCAN_TOO_LARGE) return { found: false, reason: "too_large" };
  return { found: false, reason: "malformed" };
}

/** Scans `input` delivered in the given pieces. */
function scan(path: string, pieces: readonly Uint8Array[], maxBytes = MIB): CostResult {
  const scanner = new JsonPathScanner(compileJsonPath(path), maxBytes);
  for (const piece of pieces) scanner.push(piece, 0, piece.length);
  return resultOf(scanner, scanner.finish());
}

const found = (cost: number): CostResult => ({ found: true, cost });
const missing = (reason: "absent" | "malformed" | "too_large"): CostResult => ({ found: false, reason });

describe("JsonPathScanner", () => {
  it.each([
    ["usage.total_tokens", '{"usage":{"total_tokens":42}}', found(42)],
    ["usage.total_tokens", '{"id":"x","choices":[{"message":{"content":"a \\"usage\\": {}"}}],"usage":{"prompt_tokens":5,"total_tokens":17}}', found(17)],
    ["usage.total_tokens", ' \n\t{ "usage" : { "total_tokens" : 7 } } \r\n', found(7)],
    ["a.b.c.d", '{"a":{"x":{"b":{"c":{"d":1}}},"b":{"c":{"d":2}}}}', found(2)],
    ["choices.1.usage.n", '{"choices":[{"usage":{"n":1}},{"usage":{"n":2}},{"usage":{"n":3}}]}', found(2)],
    ["0.1", "[[1,2],[3,4]]", found(2)],
    ["choices.01", '{"choices":{"01":5}}', found(5)],
    ["choices.01", '{"choices":[1,2]}', missing("absent")],
    ["choices.2", '{"choices":[1,2]}', missing("absent")],
    ["choices.0", '{"choices":{"0":9}}', found(9)],
    // numbers
    ["n", '{"n":0}', found(0)],
    ["n", '{"n":-0}', found(0)],
    ["n", '{"n":12.0}', found(12)],
    ["n", '{"n":12.01}', found(13)],
    ["n", '{"n":0.0001}', found(1)],
    ["n", '{"n":1e3}', found(1000)],
    ["n", '{"n":1.5E+2}', found(150)],
    ["n", '{"n":25e-1}', found(3)],
    ["n", '{"n":1e-400}', found(0)],
    ["n", `{"n":${MAX_RESPONSE_COST}}`, found(MAX_RESPONSE_COST)],
    ["n", `{"n":${MAX_RESPONSE_COST + 1}}`, missing("malformed")],
    ["n", '{"n":1e400}', missing("malformed")],
    ["n", '{"n":-1}', missing("malformed")],
    ["n", '{"n":-0.5}', missing("malformed")],
    ["n", `{"n":1${"0".repeat(70)}}`, missing("malformed")],
    // not numbers
    ["n", '{"n":"42"}', missing("malformed")],
    ["n", '{"n":null}', missing("malformed")],
    ["n", '{"n":true}', missing("malformed")],
    ["n", '{"n":{"v":1}}', missing("malformed")],
    ["n", '{"n":[1]}', missing("malformed")],
    ["usage.total_tokens", '{"usage":null}', missing("absent")],
    ["usage.total_tokens", '{"usage":{"prompt_tokens":1}}', missing("absent")],
    ["usage.total_tokens", '{"total_tokens":5}', missing("absent")],
    ["usage.total_tokens", '{"x":{"usage":{"total_tokens":5}}}', missing("absent")],
    ["usage.total_tokens", '[{"usage":{"total_tokens":5}}]', missing("absent")],
    ["n", "5", missing("absent")],
    ["n", '"n"', missing("absent")],
    ["n", "", missing("absent")],
    ["n", " \n ", missing("absent")],
    // duplicates: the last wins, as in JSON.parse
    ["n", '{"n":1,"n":2}', found(2)],
    ["usage.n", '{"usage":{"n":1},"usage":{"m":2}}', missing("absent")],
    ["usage.n", '{"usage":{"n":1},"usage":null}', missing("absent")],
    ["usage.n", '{"usage":{"n":"x"},"usage":{"n":3}}', found(3)],
    // keys after unescaping; other characters never match
    ["usage.total_tokens", '{"\\u0075sage":{"total\\u005Ftokens":4}}', found(4)],
    ["a-b", '{"a\\u002db":4}', found(4)],
    ["usage", '{"us\\u00e9age":1,"usag\\u0065":2}', found(2)],
    ["usage", '{"usage\\u0000":1}', missing("absent")],
    ["usage", '{"usagé":1}', missing("absent")],
    ["n", '{"\\"n\\"":1,"\\/":2,"x":"\\b\\f\\n\\r\\t\\\\"}', missing("absent")],
    // a UTF-8 BOM is dropped, as Response.json() drops it
    ["n", '\ufeff{"n":3}', found(3)],
    ["n", ' \ufeff{"n":3}', missing("malformed")],
    // not well-formed JSON: no cost, even when the path was read
    ["n", '{"n":3', missing("malformed")],
    ["n", '{"n":3,}', missing("malformed")],
    ["n", '{"n":3}}', missing("malformed")],
    ["n", '{"n":3} x', missing("malformed")],
    ["n", '{"n":03}', missing("malformed")],
    ["n", '{"n":+3}', missing("malformed")],
    ["n", '{"n":.5}', missing("malformed")],
    ["n", '{"n":5.}', missing("malformed")],
    ["n", '{"n":5e}', missing("malformed")],
    ["n", '{"n":-}', missing("malformed")],
    ["n", '{"n":3,"s":"a\nb"}', missing("malformed")],
    ["n", '{"n":3,"s":"\\x"}', missing("malformed")],
    ["n", '{"n":3,"s":"\\u12G4"}', missing("malformed")],
    ["n", '{"n":3,"t":tru}', missing("malformed")],
    ["n", '{"n":3,"t":nul}', missing("malformed")],
    ["n", '{"n":3 "m":4}', missing("malformed")],
    ["n", '{n:3}', missing("malformed")],
    ["n", '{"n":3]', missing("malformed")],
    ["n", '["n":3]', missing("malformed")],
    ["n", "{'n':3}", missing("malformed")],
  ])("reads %s from %j", (path, text, expected) => {
    expect(scan(path, [bytes(text)])).toEqual(expected);
    // The reference agrees on every case.
    expect(referenceJsonCost(text.replace(/^\ufeff/, ""), path)).toEqual(expected);
  });

  it("gives the same outcome for the text cut before and after every byte", () => {
    const text = '\ufeff{"id":"é😀\\u00e9","a":[1,-2.5e-3,true,false,null,{"b":"\\"\\\\"}],"usage":{"prompt_tokens":12,"total_tokens":1234.5e1}}';
    const whole = bytes(text);
    expect(scan("usage.total_tokens", [whole])).toEqual(found(12345));
    for (let cut = 1; cut < whole.length; cut++) {
      expect(scan("usage.total_tokens", splitAt(whole, [cut]))).toEqual(found(12345));
    }
    expect(scan("usage.total_tokens", splitAt(whole, [...whole.keys()]))).toEqual(found(12345));
  });

  it("inspects at most maxBytes: exactly at the bound reads the cost, one byte over gives too_large", () => {
    const head = '{"padding":"';
    const tail = '","usage":{"total_tokens":77}}';
    const atBound = bytes(head + "x".repeat(MIB - head.length - tail.length) + tail);
    expect(atBound.length).toBe(MIB);
    expect(scan("usage.total_tokens", [atBound])).toEqual(found(77));
    const overBound = bytes(head + "x".repeat(MIB - head.length - tail.length + 1) + tail);
    expect(scan("usage.total_tokens", [overBound])).toEqual(missing("too_large"));
    // In pieces too, and the scanner settles as soon as it passes the bound.
    const scanner = new JsonPathScanner(compileJsonPath("n"), 10);
    scanner.push(bytes('{"a":"123'), 0, 9);
    expect(scanner.settled).toBe(false);
    scanner.push(bytes('45"}'), 0, 4);
    expect(scanner.settled).toBe(true);
    expect(scanner.finish()).toBe(SCAN_TOO_LARGE);
  });

  it("settles early on malformed input", () => {
    const scanner = new JsonPathScanner(compileJsonPath("n"), MIB);
    scanner.push(bytes('{"n":1,,'), 0, 8);
    expect(scanner.settled).toBe(true);
    expect(scanner.finish()).toBe(SCAN_INVALID);
  });

  it(`nests up to ${MAX_JSON_DEPTH} containers deep, then gives too_large`, () => {
    const deep = (levels: number) => bytes(`${"[".repeat(levels - 1)}{"n":1}${"]".repeat(levels - 1)}`);
    expect(scan("n", [deep(MAX_JSON_DEPTH)])).toEqual(missing("absent"));
    expect(scan("n", [deep(MAX_JSON_DEPTH + 1)])).toEqual(missing("too_large"));
    expect(scan("0.0.0.n", [bytes('[[[{"n":4}]]]')])).toEqual(found(4));
  });

  it("reads the same texts again after reset()", () => {
    const scanner = new JsonPathScanner(compileJsonPath("n"), MIB);
    for (const [text, outcome] of [
      ['{"n":1', SCAN_INVALID],
      ['{"n":2}', SCAN_COST],
      ['{"n":"2"}', SCAN_UNUSABLE],
      ["[]", SCAN_ABSENT],
    ] as const) {
      scanner.reset();
      scanner.push(bytes(text), 0, text.length);
      expect(scanner.finish()).toBe(outcome);
    }
  });
});

describe("costOfNumber", () => {
  it("rounds fractions up and refuses what is not a cost", () => {
    expect([0, -0, 0.1, 1, 1.0000001, 999.5, MAX_RESPONSE_COST].map(costOfNumber)).toEqual([0, 0, 1, 1, 2, 1000, MAX_RESPONSE_COST]);
    expect([-1, -0.1, Number.NaN, Number.POSITIVE_INFINITY, MAX_RESPONSE_COST + 0.5].map(costOfNumber)).toEqual([null, null, null, null, null]);
  });
});

// ---------------------------------------------------------------- properties

const PATHS = ["usage.total_tokens", "usage", "choices.0.usage.total_tokens", "a.0", "0.1"];
const usageValue = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 2_000_000 }) },
  { weight: 2, arbitrary: fc.double({ min: -10, max: 1e6, noNaN: true }) },
  { weight: 1, arbitrary: fc.constantFrom(0, -0, 1e-7, 1e9, 1e9 + 1, 2 ** 53) },
  { weight: 1, arbitrary: fc.string() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
);
/** Documents that often hold the paths above, at varying depths and with duplicates. */
const documentArb = fc
  .record({
    noise: fc.dictionary(fc.constantFrom("id", "usage", "choices", "a", "total_tokens", "x", "é"), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
    usage: fc.option(fc.record({ prompt_tokens: usageValue, total_tokens: usageValue, x: fc.jsonValue({ maxDepth: 2 }) }, { requiredKeys: [] }), { nil: undefined }),
    choices: fc.option(fc.array(fc.record({ usage: fc.record({ total_tokens: usageValue }) }), { maxLength: 3 }), { nil: undefined }),
    a: fc.option(fc.array(usageValue, { maxLength: 3 }), { nil: undefined }),
    root: fc.oneof({ weight: 6, arbitrary: fc.constant("object") }, { weight: 1, arbitrary: fc.constantFrom("array", "scalar") }),
  })
  .map(({ noise, usage, choices, a, root }) => {
    const object: Record<string, unknown> = { ...noise };
    if (usage !== undefined) object.usage = usage;
    if (choices !== undefined) object.choices = choices;
    if (a !== undefined) object.a = a;
    return root === "object" ? object : root === "array" ? [a ?? [], object] : (a?.[0] ?? 5);
  });
/** The document as text: compact or indented, with a key sometimes \u-escaped, sometimes damaged. */
const textArb = fc
  .record({
    document: documentArb,
    indent: fc.constantFrom(undefined, 0, 1, "\t", " \r\n "),
    escapeKeys: fc.boolean(),
    damage: fc.oneof(
      { weight: 2, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.record({ at: fc.nat(), kind: fc.constantFrom("cut", "insert", "delete"), char: fc.constantFrom(",", "}", "]", '"', "\\", "x", "1", " ", "\n", "é") }) },
    ),
  })
  .map(({ document, indent, escapeKeys, damage }) => {
    let text = JSON.stringify(document, null, indent as string | number | undefined);
    if (escapeKeys) text = text.replaceAll('"usage"', '"\\u0075sag\\u0065"').replaceAll('"total_tokens"', '"total\\u005ftokens"');
    if (damage !== undefined) {
      const at = damage.at % (text.length + 1);
      text = damage.kind === "cut" ? text.slice(0, at) : damage.kind === "insert" ? text.slice(0, at) + damage.char + text.slice(at) : text.slice(0, at) + text.slice(at + 1);
    }
    return text;
  });

describe("JsonPathScanner properties", () => {
  it("agrees with JSON.parse on generated documents, whole or damaged", () => {
    fc.assert(
      fc.property(textArb, fc.constantFrom(...PATHS), (text, path) => {
        const whole = bytes(text);
        expect(scan(path, [whole])).toEqual(referenceJsonCost(new TextDecoder().decode(whole), path));
      }),
      { numRuns: 3000 },
    );
  });

  it("gives the same outcome however the bytes are split", () => {
    fc.assert(
      fc.property(textArb, fc.constantFrom(...PATHS), fc.array(fc.nat(), { maxLength: 12 }), (text, path, cuts) => {
        const whole = bytes(text);
        const offsets = cuts.map((c) => c % (whole.length + 1));
        expect(scan(path, splitAt(whole, offsets))).toEqual(scan(path, [whole]));
      }),
      { numRuns: 3000 },
    );
  });
});

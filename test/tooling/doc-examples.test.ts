// The rule the documents' shell examples are read and checked by
// (test/e2e/doc-examples.ts): which blocks run, what output each claims, and
// when a printed output does not hold a claim.
import { describe, expect, it } from "vitest";
import { boundValue, type DocBlock, matchClaims, readDocSteps } from "../e2e/doc-examples";

const FENCE = "```";

function blocksOf(markdown: string): DocBlock[] {
  return readDocSteps("doc.md", markdown).filter((step): step is DocBlock => step.kind === "block");
}

describe("reading a document's examples", () => {
  it("takes every shell block, with the fenced block right after it as its claimed output", () => {
    const blocks = blocksOf(["# T", "", `${FENCE}sh`, "echo hi", FENCE, "", `${FENCE}`, "hi", FENCE, "", `${FENCE}toml`, "a = 1", FENCE, "", `${FENCE}bash`, "echo x", FENCE, "Some prose.", "", `${FENCE}json`, "{}", FENCE].join("\n"));
    expect(blocks.map((b) => [b.line, b.code, b.output?.text ?? null])).toEqual([
      [3, "echo hi", "hi"],
      [15, "echo x", null],
    ]);
  });

  it("reads skip and exit markers only right before a block", () => {
    const blocks = blocksOf(["<!-- doc-test: skip: needs an account -->", `${FENCE}sh`, "wrangler login", FENCE, "<!-- doc-test: exit 1 -->", "", `${FENCE}sh`, "false", FENCE, "<!-- doc-test: skip: too far -->", "prose", `${FENCE}sh`, "true", FENCE].join("\n"));
    expect(blocks.map((b) => [b.skip, b.exitCode])).toEqual([
      ["needs an account", 0],
      [null, 1],
      [null, 0],
    ]);
  });

  it("reads `# →` claims, continued on indented comment lines", () => {
    const [block] = blocksOf([`${FENCE}sh`, "curl x", '# → {"a":1,', '#     "b":2}', "echo y   # not a claim", "# → y", FENCE].join("\n"));
    expect(block!.arrows).toEqual(['{"a":1,"b":2}', "y"]);
  });

  it("reads bind markers in document order, between blocks", () => {
    const steps = readDocSteps("doc.md", [`${FENCE}sh`, "mint", FENCE, '<!-- doc-test: bind k7m2q9x4a1bc = "id" -->', "<!-- doc-test: bind 17 = id -->", `${FENCE}sh`, "use", FENCE].join("\n"));
    expect(steps.map((s) => (s.kind === "bind" ? [s.literal, s.field, s.json] : s.code))).toEqual(["mint", ["k7m2q9x4a1bc", "id", true], ["17", "id", false], "use"]);
  });
});

describe("checking a claimed output", () => {
  const plain = (text: string) => ({ output: { lang: "", text, line: 1 }, arrows: [] });

  it("holds when the claimed lines are printed one after the other, `…` standing for any text", () => {
    expect(matchClaims(plain("HTTP/1.1 200 OK\n…\nRateLimit: …;r=199;t=1"), "\u001b[1mHTTP/1.1 200 OK\u001b[0m\r\nDate: x\nRateLimit: \"request-key-1s\";r=199;t=1\nmore")).toEqual({ ok: true });
  });

  it("fails on a changed value, a missing line, or a gap the claim does not show", () => {
    expect(matchClaims(plain("r=199"), "r=198").ok).toBe(false);
    expect(matchClaims(plain("200\n200\n429"), "200\n200\n200").ok).toBe(false);
    expect(matchClaims(plain("200\n429"), "200\n200\n429").ok).toBe(true);
    expect(matchClaims(plain("a\nc"), "a\nb\nc").ok).toBe(false);
    expect(matchClaims(plain("a\n…\nc"), "a\nb\nc").ok).toBe(true);
  });

  it("compares JSON without the spaces and line breaks outside its strings", () => {
    const json = (text: string) => ({ output: { lang: "json", text, line: 1 }, arrows: [] });
    const printed = '{"tenant":"acme","limits":{"request":{"key":[]}},"created_at":"2026-12-05T12:00:00.000Z","note":"a  b"}';
    expect(matchClaims(json('{"tenant": "acme", "limits": {…},\n "created_at": "…", "note": "a  b"}'), printed)).toEqual({ ok: true });
    expect(matchClaims(json('{"tenant": "acme", "limits": {…},\n "created_at": "…", "note": "a b"}'), printed).ok).toBe(false);
    expect(matchClaims(json('{"tenant":"globex",…}'), printed).ok).toBe(false);
  });

  it("looks for `# →` claims in order", () => {
    const arrows = (...claims: string[]) => ({ output: null, arrows: claims });
    expect(matchClaims(arrows("Created tenant acme.", "Reset key:…"), 'Created tenant acme.\n{"x":1}Reset key:abc')).toEqual({ ok: true });
    expect(matchClaims(arrows("Reset key:…", "Created tenant acme."), "Created tenant acme.\nReset key:abc").ok).toBe(false);
  });
});

describe("binding a value from an output", () => {
  it("takes a JSON field or a CLI field line, and nothing else", () => {
    expect(boundValue({ field: "id", json: true }, '{"id":"k7m2q9x4a1bc","tenant":"acme"}')).toBe("k7m2q9x4a1bc");
    expect(boundValue({ field: "id", json: true }, '{"id":17,"target":"x"}')).toBe("17");
    expect(boundValue({ field: "id", json: false }, "id       nada8b4hqya9\ntenant   acme")).toBe("nada8b4hqya9");
    expect(boundValue({ field: "id", json: true }, "no id here")).toBeNull();
  });
});

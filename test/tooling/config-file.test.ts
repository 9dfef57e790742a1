// `npm start -- --config <file>` reads JSON or JSONC (scripts/lib/config-file.mjs):
// comments and trailing commas go, strings stay as written, and a file that
// is not JSON is named by line and column.
import { describe, expect, it } from "vitest";
import { parseJsonc } from "../../scripts/lib/config-file.mjs";

describe("a config file's JSONC", () => {
  it("drops comments and trailing commas, and keeps what strings hold", () => {
    const text = '{\n  // a comment\n  "exempt_paths": ["/a//b", "/*x*/",], /* another */\n  "mode": "shadow",\n}\n';
    expect(parseJsonc(text)).toEqual({ ok: true, value: { exempt_paths: ["/a//b", "/*x*/"], mode: "shadow" } });
  });

  it("names the line and column where the JSON breaks", () => {
    expect(parseJsonc('{\n  "mode": "shadow"\n  "anonymous": "deny"\n}')).toEqual({ ok: false, problem: 'not valid JSON at line 3, column 3: unexpected "\\""' });
    expect(parseJsonc('{"a": [1, 2')).toEqual({ ok: false, problem: "not valid JSON at line 1, column 12: the file ends" });
    expect(parseJsonc('{"a": 01}')).toEqual({ ok: false, problem: 'not valid JSON at line 1, column 8: unexpected "1"' });
  });
});

// The path step (issue 23 item 1): what the gateway matches and forwards for
// a request path, table-driven, then as a property against a reference built
// from decodeURIComponent.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { normalisePath, splitUrl, withoutMethodOverrideParameter, withoutPathParameters } from "../../src/proxy/request-path";

describe("normalisePath", () => {
  it.each([
    ["/objects/x", "/objects/x"],
    ["/%6Fbjects/x", "/objects/x"],
    ["/%6fbjects/x", "/objects/x"],
    ["/v1/chat/c%6Fmpletions", "/v1/chat/completions"],
    ["/%7Euser/%41b%2dc%5F%2E%30", "/~user/Ab-c_.0"],
    ["/a%c3%a9%3f", "/a%C3%A9%3F"],
    ["/a%20b/c%3F", "/a%20b/c%3F"],
    ["/%2541", "/%2541"],
    ["//objects//x/", "/objects/x/"],
    ["/%2e%2ex/.y", "/..x/.y"],
    ["/.well-known/x", "/.well-known/x"],
    // A `%` that starts no escape is a literal `%`, written so that nothing after it becomes one.
    ["/x%zz", "/x%25zz"],
    ["/x%", "/x%25"],
    ["/x%4", "/x%254"],
    ["/%%36Fbjects/x", "/%256Fbjects/x"],
  ])("%s is matched and forwarded as %s", (raw, expected) => {
    expect(normalisePath(raw)).toBe(expected);
  });

  it.each(["/a%2Fb", "/a%2fb", "/a%5Cb", "/a%5cb", "/a%00", "/a/%2e%2e/b", "/a/%2E%2e", "/%2e/x", "/a/.%2e/b", "/a/../b", "/a/./b", "/a/..", "//.//x"])("refuses %s", (raw) => {
    expect(normalisePath(raw)).toBeNull();
  });

  it("returns the common path itself, unchanged", () => {
    const path = "/v1/objects/cat.jpg";
    expect(normalisePath(path)).toBe(path);
  });

  it("leaves one spelling: decoding the output gives what decoding the input gives, and normalising again changes nothing", () => {
    const part = fc.oneof(
      fc.constantFrom("/", "//", ".", "..", "%", "%2e", "%2E", "%25", "%6F", "%6f", "%7e", "%3f", "%c3%a9", "%zz", "%4", "a", "B", "~", "-", "_"),
      fc.integer({ min: 0, max: 255 }).map((b) => `%${b.toString(16).padStart(2, "0")}`),
      fc.stringMatching(/^[A-Za-z0-9._~!$&'()*+,;=:@-]{1,4}$/),
    );
    fc.assert(
      fc.property(fc.array(part, { maxLength: 12 }), (parts) => {
        const raw = `/${parts.join("")}`;
        const out = normalisePath(raw);
        // Refused exactly for an encoded separator or NUL, or a `.`/`..` segment once decoded.
        expect(out === null).toBe(hasEscapeOf(raw, [0x2f, 0x5c, 0x00]) || dotSegments(decodeUnreserved(raw)));
        if (out === null) return;
        // No escape of an unreserved byte is left, and every escape is upper case.
        for (const match of out.matchAll(/%(..)/g)) {
          expect(match[1]).toMatch(/^[0-9A-F]{2}$/);
          expect(UNRESERVED.test(String.fromCharCode(Number.parseInt(match[1]!, 16)))).toBe(false);
        }
        expect(out).not.toContain("//");
        expect(decodedBytes(out)).toEqual(collapseBytes(decodedBytes(raw)));
        expect(normalisePath(out)).toBe(out);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("withoutPathParameters", () => {
  it.each([
    ["/objects;jsessionid=1/y1", "/objects/y1"],
    ["/login;x=1", "/login"],
    ["/a;b;c/d;e/", "/a/d/"],
    [";x/y", "/y"],
    ["/;/", "//"],
  ])("routes %s as %s", (raw, expected) => {
    expect(withoutPathParameters(raw)).toBe(expected);
  });

  it("removes each segment's `;…` and nothing else, as splitting on / and cutting at ; does", () => {
    const part = fc.constantFrom("/", ";", "=", "a", "B", "%3B", ".", "x=1");
    fc.assert(
      fc.property(fc.array(part, { maxLength: 16 }), (parts) => {
        const path = `/${parts.join("")}`;
        const reference = path
          .split("/")
          .map((segment) => segment.split(";")[0])
          .join("/");
        const out = withoutPathParameters(path);
        expect(out).toBe(reference);
        expect(out).not.toContain(";");
        expect(withoutPathParameters(out)).toBe(out);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("withoutMethodOverrideParameter", () => {
  it.each([
    ["", ""],
    ["?a=1", "?a=1"],
    ["?_method=DELETE", ""],
    ["?_method=DELETE&a=1", "?a=1"],
    ["?a=1&%5Fmethod=PUT&b", "?a=1&b"],
    ["?a=1&%5fmethod", "?a=1"],
    ["?_method&_method=x&c=3", "?c=3"],
    ["?__method=x&_methods=y&method=z", "?__method=x&_methods=y&method=z"],
    ["?x=_method", "?x=_method"],
    ["?%zz=1&_method=x", "?%zz=1"],
  ])("forwards %s as %s", (search, expected) => {
    expect(withoutMethodOverrideParameter(search)).toBe(expected);
  });
});

describe("splitUrl", () => {
  it("leaves a fragment out of the path and the query: an origin never sees it, so a route must not match it", () => {
    expect(splitUrl("http://h.test//OBJECTS/#B")).toEqual({ pathname: "//OBJECTS/", search: "" });
    expect(splitUrl("http://h.test/a?b=1#c?d")).toEqual({ pathname: "/a", search: "?b=1" });
  });
});

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** The bytes a path stands for: each valid escape one byte, a lone `%` itself, other characters as UTF-8. */
function decodedBytes(path: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < path.length; i++) {
    if (path[i] === "%" && /^[0-9A-Fa-f]{2}$/.test(path.slice(i + 1, i + 3))) {
      out.push(Number.parseInt(path.slice(i + 1, i + 3), 16));
      i += 2;
    } else out.push(...new TextEncoder().encode(path[i]!));
  }
  return out;
}

/** Runs of `/` collapsed, on bytes. */
function collapseBytes(bytes: number[]): number[] {
  return bytes.filter((b, i) => !(b === 0x2f && bytes[i - 1] === 0x2f));
}

function hasEscapeOf(path: string, targets: number[]): boolean {
  for (const match of path.matchAll(/%([0-9A-Fa-f]{2})/g)) if (targets.includes(Number.parseInt(match[1]!, 16))) return true;
  return false;
}

function decodeUnreserved(path: string): string {
  return path.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const ch = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(ch) ? ch : escape;
  });
}

function dotSegments(path: string): boolean {
  return path.split("/").some((segment) => segment === "." || segment === "..");
}

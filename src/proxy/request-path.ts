// docs/design.md step 0: the request path as the gateway matches and forwards it.
// The runtime's URL parser has already resolved `.`/`..` (also `%2e`), turned
// `\` into `/` and percent-encoded what needs it, so what is left to an
// attacker is spelling:
// - encoded separators and NUL (which an origin that decodes before
//   normalising turns into `/`, `\` or a string end: a way out of the base
//   path): refused;
// - escapes of unreserved characters (`/%6Fbjects/x` is `/objects/x` to any
//   origin that decodes, and nearly all do): decoded, as RFC 3986 §6.2.2.2
//   allows, so that routes match what the origin will serve; the origin gets
//   the decoded spelling;
// - other escapes: kept, with upper-case hex (one spelling per byte);
// - a segment that is `.` or `..` once decoded (the parser resolves these, but
//   a URL that did not come through it must not climb out of the base path):
//   refused;
// - runs of `/` (which many servers merge, so a route `/objects/:object`
//   could be dodged with `//objects/x`): collapsed.
// Case and a trailing slash are kept as sent for the origin; route matching
// ignores them (src/engine/routes.ts).
//
// Path parameters (`;` in a segment: `/login;x=1`, `/objects;jsessionid=1/y`)
// are left to the gateway (src/gateway.ts): servlet containers and Spring
// strip `;…` from each segment before routing, so `/login;x=1` reaches their
// `/login`. Refused unless the config allows them; then routes match the path
// with each segment's parameters removed (withoutPathParameters).

/** Null: refuse with 400 invalid_path. Otherwise the path as matched and forwarded. */
export function normalisePath(pathname: string): string | null {
  // The common path has no `%`, no `//` and no segment starting with `.`: returned as it is, nothing allocated.
  if (pathname.indexOf("%") === -1 && pathname.indexOf("//") === -1 && pathname.indexOf("/.") === -1) return pathname;
  let out = "";
  // Where the current segment starts in `out` (just after its `/`).
  let segmentStart = 0;
  const n = pathname.length;
  for (let i = 0; i < n; i++) {
    const ch = pathname.charCodeAt(i);
    if (ch === 47 /* / */) {
      if (dotSegment(out, segmentStart)) return null;
      // A run of `/` is one.
      if (out.length > 0 && out.charCodeAt(out.length - 1) === 47) continue;
      out += "/";
      segmentStart = out.length;
      continue;
    }
    if (ch === 37 /* % */) {
      const byte = i + 2 < n ? escapedByte(pathname.charCodeAt(i + 1), pathname.charCodeAt(i + 2)) : -1;
      if (byte === -1) {
        // A `%` without two hex digits is a literal `%`: written `%25`, so that
        // what follows can never become an escape once its neighbours are
        // decoded (`%%36F` would otherwise leave `%6F` for the origin to decode).
        out += "%25";
        continue;
      }
      if (byte === 0x2f || byte === 0x5c || byte === 0x00) return null;
      out += UNRESERVED[byte] === 1 ? String.fromCharCode(byte) : `%${HEX[byte >> 4]}${HEX[byte & 15]}`;
      i += 2;
      continue;
    }
    out += pathname[i];
  }
  if (dotSegment(out, segmentStart)) return null;
  return out;
}

/** Whether out[from..] is `.` or `..`. */
function dotSegment(out: string, from: number): boolean {
  const length = out.length - from;
  if (length === 1) return out.charCodeAt(from) === 46;
  if (length === 2) return out.charCodeAt(from) === 46 && out.charCodeAt(from + 1) === 46;
  return false;
}

const HEX = "0123456789ABCDEF";

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  const lower = code | 0x20;
  if (lower >= 97 && lower <= 102) return lower - 87;
  return -1;
}

/** The byte two hex digits spell, or -1 when they are not both hex digits. */
function escapedByte(high: number, low: number): number {
  const hi = hexValue(high);
  const lo = hexValue(low);
  return hi === -1 || lo === -1 ? -1 : hi * 16 + lo;
}

/** 1 for the bytes RFC 3986 calls unreserved: A–Z a–z 0–9 - . _ ~ */
const UNRESERVED: Uint8Array = (() => {
  const table = new Uint8Array(256);
  for (let c = 0; c < 128; c++) {
    const ch = String.fromCharCode(c);
    if (/[A-Za-z0-9\-._~]/.test(ch)) table[c] = 1;
  }
  return table;
})();

/** The pathname and the query (with its `?`, or "") of an absolute URL string, without building a URL. */
export function splitUrl(whole: string): { pathname: string; search: string } {
  // request.url is the runtime's serialisation of a parsed absolute URL:
  // `scheme://authority/path?query#fragment`. A client never sends a
  // fragment, but a Request made in code (a service binding's caller, a
  // test) keeps one: it is not part of the path (an origin never sees it,
  // so a route must not match on it).
  const hash = whole.indexOf("#");
  const url = hash === -1 ? whole : whole.slice(0, hash);
  const schemeEnd = url.indexOf("://");
  const pathStart = schemeEnd === -1 ? -1 : url.indexOf("/", schemeEnd + 3);
  if (pathStart === -1) {
    const q = url.indexOf("?");
    return { pathname: "/", search: q === -1 ? "" : url.slice(q) };
  }
  const q = url.indexOf("?", pathStart);
  if (q === -1) return { pathname: url.slice(pathStart), search: "" };
  return { pathname: url.slice(pathStart, q), search: url.slice(q) };
}

/**
 * `path` with each segment's path parameters (`;` to the segment's end)
 * removed, as servlet containers route it: `/objects;v=1/y;x` → `/objects/y`.
 */
export function withoutPathParameters(path: string): string {
  let out = "";
  let from = 0;
  const n = path.length;
  while (from < n) {
    const semicolon = path.indexOf(";", from);
    if (semicolon === -1) return out + path.slice(from);
    out += path.slice(from, semicolon);
    const slash = path.indexOf("/", semicolon);
    if (slash === -1) return out;
    from = slash;
  }
  return out;
}

/**
 * Removes every `_method` parameter from a query (`?` included, or ""):
 * Rails, Laravel and Express's method-override read it (its name
 * percent-decoded, `+` as a space) as the request's method, so a POST the
 * gateway charges as a POST would run the origin's DELETE handler.
 */
export function withoutMethodOverrideParameter(search: string): string {
  // The common query has neither `_` nor an escape that could spell one: returned as it is.
  if (search.indexOf("_") === -1 && search.indexOf("%") === -1) return search;
  const pairs = search.slice(1).split("&");
  const kept = pairs.filter((pair) => !isMethodOverride(pair));
  if (kept.length === pairs.length) return search;
  return kept.length === 0 ? "" : `?${kept.join("&")}`;
}

function isMethodOverride(pair: string): boolean {
  const eq = pair.indexOf("=");
  const raw = (eq === -1 ? pair : pair.slice(0, eq)).replace(/\+/g, " ");
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    return false;
  }
  return name === "_method";
}

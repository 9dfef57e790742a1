// docs/design.md step 0: the request path as the gateway matches and forwards it.
// The runtime's URL parser has already resolved `.`/`..` (also `%2e`), turned
// `\` into `/` and percent-encoded what needs it, so what is left to an
// attacker is spelling: encoded separators and NUL (which an origin that
// decodes before normalising turns into `/`, `\` or a string end: a way out of
// the base path), and runs of `/` (which many servers merge, so a route
// `/objects/:object` could be dodged with `//objects/x`). Case and a trailing
// slash are kept as sent for the origin; route matching ignores them
// (src/engine/routes.ts).

/** Null: refuse with 400 invalid_path. Otherwise the path with runs of `/` collapsed. */
export function normalisePath(pathname: string): string | null {
  // The common path has neither `%` nor `//`: returned as it is, nothing allocated.
  const percent = pathname.indexOf("%");
  if (percent !== -1 && hasForbiddenEscape(pathname, percent)) return null;
  if (pathname.indexOf("//") === -1) return pathname;
  let out = "";
  let lastSlash = false;
  for (let i = 0; i < pathname.length; i++) {
    const ch = pathname.charCodeAt(i);
    if (ch === 47 /* / */) {
      if (lastSlash) continue;
      lastSlash = true;
    } else lastSlash = false;
    out += pathname[i];
  }
  return out;
}

// %2F / %2f (slash), %5C / %5c (backslash), %00 (NUL).
function hasForbiddenEscape(path: string, from: number): boolean {
  for (let i = from; i !== -1 && i + 2 < path.length; i = path.indexOf("%", i + 1)) {
    const a = path.charCodeAt(i + 1);
    const b = path.charCodeAt(i + 2) | 0x20; // lower-case a hex letter
    if (a === 50 /* 2 */ && b === 102 /* f */) return true;
    if (a === 53 /* 5 */ && b === 99 /* c */) return true;
    if (a === 48 /* 0 */ && path.charCodeAt(i + 2) === 48) return true;
  }
  return false;
}

/** The pathname and the query (with its `?`, or "") of an absolute URL string, without building a URL. */
export function splitUrl(url: string): { pathname: string; search: string } {
  // request.url is the runtime's serialisation of a parsed absolute URL:
  // `scheme://authority/path?query` (a fragment is never sent).
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

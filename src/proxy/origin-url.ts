// The origin URL is built by concatenation onto the configured base, never
// resolved against it. The request path comes from the WHATWG URL parser,
// which has already turned `\` into `/` and removed `.`, `..`, `%2e` and
// `%2e%2e` segments, so the path is absolute and cannot climb out of the base
// path; and because it is appended after the base's host (and base path), a
// path such as `//evil.example` stays a path on the origin.

export interface OriginBase {
  /** `scheme://host[:port]`, no trailing slash. */
  readonly origin: string;
  /** The base path without a trailing slash ("" for none). */
  readonly basePath: string;
}

export type OriginBaseResult = { ok: true; base: OriginBase | null } | { ok: false; message: string };

/** Parse ORIGIN_URL once. Empty or absent → null: forward to the zone's own origin. */
export function parseOriginBase(originUrl: string | undefined): OriginBaseResult {
  if (originUrl === undefined || originUrl.trim() === "") return { ok: true, base: null };
  let url: URL;
  try {
    url = new URL(originUrl.trim());
  } catch {
    return { ok: false, message: "ORIGIN_URL is not an absolute URL" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { ok: false, message: "ORIGIN_URL must be http or https" };
  if (url.username !== "" || url.password !== "") return { ok: false, message: "ORIGIN_URL must not carry credentials" };
  if (url.search !== "" || url.hash !== "") return { ok: false, message: "ORIGIN_URL must not have a query or fragment" };
  return { ok: true, base: { origin: url.origin, basePath: url.pathname.replace(/\/+$/, "") } };
}

/**
 * The URL to fetch at the origin: base path + the request's normalised path + its query.
 * `pathname` must come from `new URL(request.url).pathname` (always begins with "/").
 */
export function originUrlFor(base: OriginBase, pathname: string, search: string): string {
  return base.origin + base.basePath + pathname + search;
}

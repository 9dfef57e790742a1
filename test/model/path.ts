// The path step and route matching, from the contract's words: encoded
// separators and NUL refused, runs of `/` collapsed, escapes of unreserved
// characters decoded (others kept with upper-case hex), `.` and `..`
// segments refused, a `;` in a segment refused unless path parameters are
// allowed (then routes match without them), and routes matched ignoring
// a trailing slash and ASCII case, a HEAD taking a GET route.
import type { Method, RouteSpec } from "./scenario";

export type PathOutcome = { ok: true; path: string; routePath: string } | { ok: false };

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** The path the origin gets and the one routes see, or a refusal (400 invalid_path). */
export function normalise(sent: string, allowPathParameters: boolean): PathOutcome {
  if (/%(2f|5c|00)/i.test(sent)) return { ok: false };
  const collapsed = sent.replace(/\/{2,}/g, "/");
  const decoded = collapsed.replace(/%([0-9A-Fa-f]{2})|%/g, (whole, hex: string | undefined) => {
    if (hex === undefined) return "%25";
    const ch = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(ch) ? ch : `%${hex.toUpperCase()}`;
  });
  const segments = decoded.split("/").slice(1);
  if (segments.some((s) => s === "." || s === "..")) return { ok: false };
  if (segments.some((s) => s.includes(";"))) {
    if (!allowPathParameters) return { ok: false };
    return { ok: true, path: decoded, routePath: `/${segments.map((s) => s.split(";")[0]).join("/")}` };
  }
  return { ok: true, path: decoded, routePath: decoded };
}

export interface RouteFound {
  index: number;
  route: RouteSpec;
  params: Record<string, string>;
}

/** The first route whose method and pattern match; a HEAD matches a GET route. */
export function findRoute(routes: readonly RouteSpec[], method: Method, routePath: string): RouteFound | null {
  const trimmed = routePath.length > 1 && routePath.endsWith("/") ? routePath.slice(0, -1) : routePath;
  const segments = trimmed.split("/").slice(1);
  for (const [index, route] of routes.entries()) {
    if (route.method !== undefined && route.method !== method && !(method === "HEAD" && route.method === "GET")) continue;
    const pattern = route.path.split("/").slice(1);
    if (pattern.length !== segments.length) continue;
    const params: Record<string, string> = {};
    let matches = true;
    for (let i = 0; i < pattern.length && matches; i++) {
      const p = pattern[i]!;
      const s = segments[i]!;
      if (p.startsWith(":")) {
        if (s === "") matches = false;
        else params[p.slice(1)] = s;
      } else if (p.toLowerCase() !== s.toLowerCase()) matches = false;
    }
    if (matches) return { index, route, params };
  }
  return null;
}

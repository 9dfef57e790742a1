// Routes: the first entry whose method and path pattern match a request gives
// its charges ({category: cost}) and its quota action. Compiled once from the
// config; matching walks the path in place, without splitting it.
//
// Patterns: literal segments (a `:` inside one is literal, as in
// `/v1/models/m:generate`), `:name` (exactly one non-empty segment, captured
// raw, still percent-encoded, so an object name has one spelling), and a final
// `*` (any rest, including none: `/files/*` matches `/files`, `/files/` and
// `/files/a/b`; the rest is captured as params["*"]). Methods compare
// case-insensitively; no method means any method; a HEAD request also
// matches a GET route (RFC 9110 §9.3.2: most origins answer it with the
// GET handler, so it must not be a free way to run it).
//
// Spelling cannot dodge a route: the path given to match()
// has its runs of `/` collapsed already (src/proxy/request-path.ts), a
// trailing slash is ignored (`/objects/x/` matches `/objects/:object`), and
// literal segments compare ignoring ASCII case unless the route says
// `case_sensitive: true` (Express and many servers ignore case, so
// `/OBJECTS/x` would otherwise reach the same handler unmetered). Parameters
// are captured as sent.
import { MAX_COST } from "./limit";
import { parseStatusSet, type StatusSet } from "./status-match";

export interface RouteSpec {
  method?: string;
  path: string;
  charges?: Record<string, number>;
  /** The name of an entry of the config's `origins` (checked there); absent: the default origin. */
  origin?: string;
  quota?: "store" | "release";
  /** Compare literal segments exactly (default: ignoring ASCII case). */
  case_sensitive?: boolean;
  /** Priced by the origin's answer; validated and compiled by the config (src/proxy/response-cost-spec.ts), opaque here. */
  response_charge?: unknown;
  /** The route's charges are taken only when the origin answers one of these statuses (codes or classes like "4xx"). */
  charge_on_status?: readonly (number | string)[];
}

/** The fields a route may have: anything else is refused, so a typo is not silently ignored. */
const ROUTE_FIELDS: ReadonlySet<string> = new Set(["method", "path", "charges", "quota", "case_sensitive", "response_charge", "origin", "charge_on_status"]);

export interface RouteMatch {
  /** The matching entry's index in the routes list. */
  index: number;
  /** [category, cost] pairs in the order the config lists them. The `request` cost of 1 every request pays is not included. */
  charges: readonly (readonly [category: string, cost: number])[];
  quota: "store" | "release" | null;
  params: Record<string, string>;
  /** charge_on_status: `charges` are taken only when the origin's status is in it; null = taken at admission. */
  chargeOnStatus: StatusSet | null;
}

export interface RouteMatcher {
  /** The first route matching, or null. `path` is the URL's pathname (it starts with `/`). */
  match(method: string, path: string): RouteMatch | null;
  /** Every category some route charges, once each, in config order (for explain). */
  readonly categories: readonly string[];
  /** The routes whose charges depend on the origin's status (`charge_on_status`), in config order (for explain). */
  readonly statusCharged: readonly StatusChargedRoute[];
}

/** A `charge_on_status` route as explain shows it. */
export interface StatusChargedRoute {
  /** Its index in the routes list. */
  readonly index: number;
  readonly charges: readonly (readonly [category: string, cost: number])[];
  /** The statuses as the config writes them (codes and classes like "4xx"). */
  readonly statuses: readonly (number | string)[];
}

export const CATEGORY_NAME = /^[a-z][a-z0-9_]{0,31}$/;
/** Names of the config's `origins` entries, which a route's `origin` names. */
export const ORIGIN_NAME = /^[a-z][a-z0-9_-]{0,31}$/;
const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const METHOD = /^[A-Za-z]{1,16}$/;
const MAX_PATH_CHARS = 1024;

/** Null when `spec` is a valid route, else a short reason naming the field. */
export function routeSpecError(spec: unknown): string | null {
  if (typeof spec !== "object" || spec === null || Array.isArray(spec)) return "a route must be an object {method?, path, charges?, quota?}";
  for (const field of Object.keys(spec)) if (!ROUTE_FIELDS.has(field)) return `${field.slice(0, 40)} is not a known route field`;
  const { method, path, charges, quota, case_sensitive: caseSensitive } = spec as Record<string, unknown>;
  if (caseSensitive !== undefined && typeof caseSensitive !== "boolean") return "case_sensitive must be true or false";
  if (method !== undefined && (typeof method !== "string" || !METHOD.test(method))) return "method must be an HTTP method name such as GET";
  if (typeof path !== "string" || !path.startsWith("/")) return "path must be a string beginning with /";
  if (path.length > MAX_PATH_CHARS) return `path must be at most ${MAX_PATH_CHARS} characters`;
  const segments = path.slice(1).split("/");
  const names = new Set<string>();
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.includes("*")) {
      if (segment !== "*" || i !== segments.length - 1) return "path: * may only be the last segment, on its own";
    } else if (segment.startsWith(":")) {
      const name = segment.slice(1);
      if (!PARAM_NAME.test(name) || name === "__proto__") return `path: parameter :${name} must be named with letters, digits and _`;
      if (names.has(name)) return `path: parameter :${name} appears twice`;
      names.add(name);
    }
  }
  if (charges !== undefined) {
    if (typeof charges !== "object" || charges === null || Array.isArray(charges)) return "charges must be an object {category: cost}";
    for (const [category, cost] of Object.entries(charges)) {
      if (!CATEGORY_NAME.test(category)) return "charges: category names must match ^[a-z][a-z0-9_]{0,31}$";
      if (typeof cost !== "number" || !Number.isInteger(cost) || cost < 0 || cost > MAX_COST) return `charges.${category} must be a whole number >= 0 and <= ${MAX_COST}`;
    }
  }
  const origin = (spec as Record<string, unknown>).origin;
  if (origin !== undefined && (typeof origin !== "string" || !ORIGIN_NAME.test(origin))) return "origin must name an entry of origins (^[a-z][a-z0-9_-]{0,31}$)";
  if (quota !== undefined && quota !== "store" && quota !== "release") return 'quota must be "store" or "release"';
  if (quota !== undefined && !names.has("object")) return "quota routes need an :object parameter in path (the object's name)";
  const statuses = (spec as { charge_on_status?: unknown }).charge_on_status;
  if (statuses !== undefined) {
    const parsed = parseStatusSet(statuses);
    if (!parsed.ok) return `charge_on_status${parsed.index === null ? "" : `.${parsed.index}`} ${parsed.message}`;
  }
  return null;
}

interface CompiledRoute {
  readonly index: number;
  /** Upper case, or null for any method. */
  readonly method: string | null;
  /** Literal text (lower case unless caseSensitive), or null for a parameter segment. */
  readonly literals: readonly (string | null)[];
  readonly caseSensitive: boolean;
  readonly paramNames: readonly (string | null)[];
  readonly rest: boolean;
  readonly charges: readonly (readonly [string, number])[];
  readonly quota: "store" | "release" | null;
  readonly chargeOnStatus: StatusSet | null;
}

function compileRoute(spec: RouteSpec, index: number): CompiledRoute {
  const reason = routeSpecError(spec);
  if (reason !== null) throw new TypeError(`invalid route ${index}: ${reason}`);
  const segments = spec.path.slice(1).split("/");
  const rest = segments[segments.length - 1] === "*";
  if (rest) segments.pop();
  // A trailing slash in the pattern means nothing, as in the request.
  if (!rest && segments.length > 1 && segments[segments.length - 1] === "") segments.pop();
  const caseSensitive = spec.case_sensitive === true;
  return {
    index,
    method: spec.method === undefined ? null : spec.method.toUpperCase(),
    caseSensitive,
    literals: segments.map((s) => (s.startsWith(":") ? null : caseSensitive ? s : s.toLowerCase())),
    paramNames: segments.map((s) => (s.startsWith(":") ? s.slice(1) : null)),
    rest,
    charges: Object.freeze(Object.entries(spec.charges ?? {}).map(([category, cost]) => Object.freeze([category, cost] as const))),
    quota: spec.quota ?? null,
    chargeOnStatus: compileStatusSet(spec.charge_on_status),
  };
}

function compileStatusSet(value: unknown): StatusSet | null {
  if (value === undefined) return null;
  const parsed = parseStatusSet(value);
  if (!parsed.ok) throw new TypeError(`invalid charge_on_status: ${parsed.message}`);
  return parsed.set;
}

/** Whether `path` at `pos` holds `lower` (already lower case), ignoring ASCII case. */
function equalsFoldedAt(path: string, pos: number, lower: string): boolean {
  for (let i = 0; i < lower.length; i++) {
    let c = path.charCodeAt(pos + i);
    if (c >= 65 && c <= 90) c |= 0x20;
    if (c !== lower.charCodeAt(i)) return false;
  }
  return true;
}

// Walks `path` segment by segment; fills `captured` with parameter values and
// returns whether the route matches.
function matchPath(route: CompiledRoute, path: string, captured: string[]): boolean {
  const length = path.length;
  if (length === 0 || path.charCodeAt(0) !== 47 /* / */) return false;
  let pos = 1;
  const literals = route.literals;
  for (let i = 0; i < literals.length; i++) {
    if (pos > length) return false;
    let end = path.indexOf("/", pos);
    if (end < 0) end = length;
    const literal = literals[i];
    if (literal === null || literal === undefined) {
      if (end === pos) return false;
      captured.push(path.slice(pos, end));
    } else if (end - pos !== literal.length || !(route.caseSensitive ? path.startsWith(literal, pos) : equalsFoldedAt(path, pos, literal))) {
      return false;
    }
    pos = end + 1;
  }
  if (route.rest) {
    captured.push(pos >= length ? "" : path.slice(pos));
    return true;
  }
  return pos === length + 1;
}

/** Compiles the routes list once (throws on an invalid entry: validate with routeSpecError first). */
export function compileRoutes(specs: readonly RouteSpec[]): RouteMatcher {
  const routes = specs.map(compileRoute);
  const captured: string[] = [];
  const categories = [...new Set(routes.flatMap((route) => route.charges.map(([category]) => category)))];
  const statusCharged = routes.flatMap((route) => (route.chargeOnStatus === null ? [] : [{ index: route.index, charges: route.charges, statuses: route.chargeOnStatus.spec }]));
  return {
    categories,
    statusCharged,
    match(method: string, requestPath: string): RouteMatch | null {
      // A trailing slash is ignored ("/objects/x/" is "/objects/x"); "/" stays "/".
      const path = requestPath.length > 1 && requestPath.charCodeAt(requestPath.length - 1) === 47 ? requestPath.slice(0, -1) : requestPath;
      let upper: string | null = null;
      for (const route of routes) {
        if (route.method !== null && route.method !== method) {
          upper ??= method.toUpperCase();
          // A HEAD runs the GET handler on most origins (Express, Rails, Django, Flask, Go): it pays a GET route's charges.
          if (route.method !== upper && !(upper === "HEAD" && route.method === "GET")) continue;
        }
        captured.length = 0;
        if (!matchPath(route, path, captured)) continue;
        const params: Record<string, string> = {};
        let c = 0;
        for (const name of route.paramNames) if (name !== null) params[name] = captured[c++]!;
        if (route.rest) params["*"] = captured[c]!;
        return { index: route.index, charges: route.charges, quota: route.quota, params, chargeOnStatus: route.chargeOnStatus };
      }
      return null;
    },
  };
}

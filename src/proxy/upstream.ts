// Where an admitted request goes: the default origin (ORIGIN_URL) or a named
// one from the config's `origins`, chosen by the route's `origin` field.
//
// Two kinds of origin, one rule for the URL: a base URL is joined with the
// request's collapsed path and query by concatenation (never resolution, see
// origin-url.ts); a Workers service binding (`service:BINDING`) gets the same
// path and query on the request's own scheme and host, and is called with
// `env.BINDING.fetch` — no network hop, the same header rules, the same
// settlement. Compiled once per runtime: a route's origin is an index lookup.
import type { OriginBase } from "./origin-url";
import { originUrlFor, parseOriginBase } from "./origin-url";

/** The name the default origin (ORIGIN_URL) goes by in health and in errors. */
export const DEFAULT_ORIGIN_NAME = "default";

/** What a service binding must offer: a Fetcher, as `wrangler types` declares it. */
interface ServiceFetcher {
  fetch(input: string, init?: RequestInit): Promise<Response>;
}

/** One origin the gateway can forward to. */
export interface Upstream {
  /** `default` for ORIGIN_URL, else the key under `origins`. */
  readonly name: string;
  /** The URL to ask for a request's collapsed path and query; `requestUrl` is the client's URL. */
  url(path: string, search: string, requestUrl: string): string;
  /**
   * fetch for a URL origin, `env.BINDING.fetch` for a service. The binding is
   * read from the request's own env: a binding is an isolate's object, and a
   * test may hand the Worker another env.
   */
  fetch(url: string, init: RequestInit, env: object): Promise<Response>;
  /** True when its fetch goes over the network (a URL or the zone's origin), which drops the connection-level headers itself; false for a service binding, which passes every header on. */
  readonly network: boolean;
}

/** What health says of one origin. */
export interface OriginHealth {
  readonly kind: "url" | "service" | "zone";
  readonly usable: boolean;
  /** Why it is not usable; never a URL (it may carry a path the operator keeps private) or an error text. */
  readonly reason?: string;
}

export interface Upstreams {
  /** The default origin (ORIGIN_URL; the zone's own origin when it is empty). */
  readonly fallback: Upstream;
  /** The origin of each route, by route index: the route's named one, or the default. */
  readonly byRoute: readonly Upstream[];
  readonly health: Readonly<Record<string, OriginHealth>>;
}

export type UpstreamsResult = { readonly ok: true; readonly upstreams: Upstreams } | { readonly ok: false; readonly field: string; readonly message: string };

/** A parsed `origins` entry: a base URL or a service binding's name. */
export type OriginSpec = { readonly kind: "url"; readonly base: OriginBase } | { readonly kind: "service"; readonly binding: string };

const SERVICE_PREFIX = "service:";
/** A binding name as wrangler accepts it: a JavaScript identifier. */
const BINDING_NAME = /^[A-Za-z_$][A-Za-z0-9_$]{0,63}$/;

/**
 * Parses one `origins` value: `service:BINDING`, or an absolute http(s) URL
 * without credentials, query or fragment. The reason never quotes the value.
 */
export function parseOriginSpec(value: string): { ok: true; spec: OriginSpec } | { ok: false; message: string } {
  if (value.startsWith(SERVICE_PREFIX)) {
    const binding = value.slice(SERVICE_PREFIX.length);
    if (!BINDING_NAME.test(binding)) return { ok: false, message: "service:BINDING needs a binding name made of letters, digits and _" };
    return { ok: true, spec: { kind: "service", binding } };
  }
  if (value.trim() === "") return { ok: false, message: 'must be an http(s) URL or "service:BINDING"' };
  const parsed = parseOriginBase(value);
  if (!parsed.ok) return { ok: false, message: parsed.message.replace(/^ORIGIN_URL /, "") };
  if (parsed.base === null) return { ok: false, message: 'must be an http(s) URL or "service:BINDING"' };
  return { ok: true, spec: { kind: "url", base: parsed.base } };
}

const fetchAnywhere = (url: string, init: RequestInit): Promise<Response> => fetch(url, init);

function urlUpstream(name: string, base: OriginBase): Upstream {
  return { name, url: (path, search) => originUrlFor(base, path, search), fetch: fetchAnywhere, network: true };
}

function zoneUpstream(): Upstream {
  // The request's own scheme and host with the path as matched (collapsed, unreserved escapes decoded).
  return { name: DEFAULT_ORIGIN_NAME, url: (path, search, requestUrl) => originOf(requestUrl) + path + search, fetch: fetchAnywhere, network: true };
}

/** The request's `scheme://host[:port]`: a service Worker sees the host the client asked for. */
function originOf(requestUrl: string): string {
  const start = requestUrl.indexOf("//");
  const end = requestUrl.indexOf("/", start + 2);
  return end < 0 ? requestUrl : requestUrl.slice(0, end);
}

function serviceUpstream(name: string, binding: string): Upstream {
  return {
    name,
    url: (path, search, requestUrl) => originOf(requestUrl) + path + search,
    fetch: (url, init, env) => {
      const service = (env as Record<string, unknown>)[binding];
      // Rejects like an unreachable URL origin: the forward answers 502 naming the origin.
      if (!isFetcher(service)) return Promise.reject(new TypeError("service binding missing"));
      return service.fetch(url, init);
    },
    network: false,
  };
}

function isFetcher(value: unknown): value is ServiceFetcher {
  return typeof value === "object" && value !== null && typeof (value as { fetch?: unknown }).fetch === "function";
}

/**
 * Compiles the origins a runtime forwards to: the default from ORIGIN_URL,
 * the named ones from the config (checked against `env`: a service binding
 * that is not bound is an invalid config naming the field), and each route's.
 * `routeOrigins` is the config's `origin` per route (null: the default).
 */
export function compileUpstreams(
  defaultBase: OriginBase | null,
  origins: Readonly<Record<string, OriginSpec>>,
  routeOrigins: readonly (string | null)[],
  env: object,
): UpstreamsResult {
  const fallback = defaultBase === null ? zoneUpstream() : urlUpstream(DEFAULT_ORIGIN_NAME, defaultBase);
  const health: Record<string, OriginHealth> = { [DEFAULT_ORIGIN_NAME]: { kind: defaultBase === null ? "zone" : "url", usable: true } };
  const named = new Map<string, Upstream>();
  for (const [name, spec] of Object.entries(origins)) {
    if (spec.kind === "url") {
      named.set(name, urlUpstream(name, spec.base));
      health[name] = { kind: "url", usable: true };
      continue;
    }
    const service = (env as Record<string, unknown>)[spec.binding];
    if (!isFetcher(service)) {
      return { ok: false, field: `origins.${name}`, message: `names the service binding ${spec.binding}, which this Worker does not have (add it under [[services]] in wrangler.toml)` };
    }
    named.set(name, serviceUpstream(name, spec.binding));
    health[name] = { kind: "service", usable: true };
  }
  const byRoute: Upstream[] = [];
  for (let i = 0; i < routeOrigins.length; i++) {
    const name = routeOrigins[i];
    if (name === null || name === undefined) {
      byRoute.push(fallback);
      continue;
    }
    const upstream = name === DEFAULT_ORIGIN_NAME ? fallback : named.get(name);
    if (upstream === undefined) return { ok: false, field: `routes.${i}.origin`, message: "names no entry of origins" };
    byRoute.push(upstream);
  }
  return { ok: true, upstreams: { fallback, byRoute, health } };
}

/** The origin a request goes to: its route's, else the default. */
export function upstreamFor(upstreams: Upstreams, routeIndex: number | null): Upstream {
  return routeIndex === null ? upstreams.fallback : (upstreams.byRoute[routeIndex] ?? upstreams.fallback);
}

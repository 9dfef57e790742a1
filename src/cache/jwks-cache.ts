// The isolate's JSON Web Key Sets, one entry per configured
// `jwks_url`. A set is fetched on first use and served for `ttlMs`; an unknown
// `kid` may refetch it, at most once per JWKS_REFETCH_MIN_MS; when a fetch
// fails, the last good set serves until `staleIfErrorMs` past its freshness.
// A set with no usable signing key counts as a failed fetch, so an identity
// provider publishing an empty set for a moment does not lock everyone out.
//
// Single flight, as for the other caches (issue 10 item 9): at most one fetch
// per URL is in flight per isolate. A request that needs the set while a fetch
// runs serves the stale set when it has a usable one, and otherwise waits for
// that fetch. A fetch belongs to the request that started it, and workerd
// cancels a request's I/O when its client goes away: the starter hands the
// fetch to `keepAlive` (its waitUntil) so it runs to the end, and a waiter
// still waits at most `joinPatienceMs` — as long as the fetch's own timeout,
// so by then the fetch either settled or its context was torn down — and only
// then starts a fetch of its own.
//
// Memory: one set per configured URL (the config bounds URLs), each at most
// MAX_JWKS_KEYS keys read from at most MAX_JWKS_BYTES. Time comes in as `nowMs`.
import { createLocalJWKSet, type JSONWebKeySet, type JWK, type LocalJWKSet } from "jose";

type Joined<T> = { settled: true; value: T } | { settled: false };

/** The shared promise's value, or `{settled: false}` after `patienceMs` (a timer of our own keeps us alive meanwhile). */
async function joinWithin<T>(shared: Promise<T>, patienceMs: number): Promise<Joined<T>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<Joined<T>>((resolve) => {
    timer = setTimeout(() => resolve({ settled: false }), patienceMs);
  });
  try {
    return await Promise.race([shared.then((value): Joined<T> => ({ settled: true, value })), timeout]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

/** An unknown `kid` refetches the set at most this often per URL. */
export const JWKS_REFETCH_MIN_MS = 30_000;
/** A JWKS fetch is aborted after this long. */
export const JWKS_FETCH_TIMEOUT_MS = 5_000;
/** After a failed fetch, the URL is not asked again for this long (the stale set, or auth_unavailable, answers meanwhile). */
export const JWKS_ERROR_RETRY_MS = 5_000;
/** Largest JWKS body read: public sets are a few KB (Microsoft's, with certificate chains, about 10 KB). */
export const MAX_JWKS_BYTES = 128 * 1024;
/** Most keys kept from one set; the rest are ignored. */
export const MAX_JWKS_KEYS = 100;

/** Receives a fetch this cache starts, so it finishes if the request that started it is cancelled. */
export type KeepAlive = (work: Promise<unknown>) => void;

/** The injected fetch: `globalThis.fetch` in the gateway, a counting or failing one in tests. */
export type JwksFetch = (url: string, init: { signal: AbortSignal }) => Promise<Response>;

/** Why a fetch failed, for the operator: never the body or any key material. */
export type JwksFailure = "network" | "status" | "redirect" | "too_large" | "not_json" | "no_usable_keys";

/** A key set ready for verification: jose selects a key by `kid`, `alg` and key type, and caches its import. */
export interface JwksSnapshot {
  readonly keys: readonly JWK[];
  readonly fetchedAtMs: number;
  readonly getKey: LocalJWKSet;
}

export interface JwksCacheOptions {
  readonly ttlMs: number;
  readonly staleIfErrorMs: number;
  readonly fetch: JwksFetch;
  /** How long a request waits on another request's fetch before starting its own. Default JWKS_FETCH_TIMEOUT_MS. */
  readonly joinPatienceMs?: number;
  /** Called once per failed fetch, with the URL (config, not a claim) and the reason. */
  readonly onFailure?: (url: string, reason: JwksFailure) => void;
}

interface Flight {
  readonly promise: Promise<JwksSnapshot | null>;
}

interface UrlState {
  set: JwksSnapshot | null;
  flight: Flight | null;
  lastAttemptMs: number;
  retryAfterMs: number;
}

class JwksFetchError extends Error {
  constructor(readonly reason: JwksFailure) {
    super(reason);
  }
}

// Members that make a JWK private or symmetric: such a key is never used.
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] as const;
const PUBLIC_KTY = new Set(["RSA", "EC", "OKP"]);

/** The public signing keys of a parsed JWKS body (at most MAX_JWKS_KEYS), or null when it is not a key set. */
export function usableJwks(body: unknown): JWK[] | null {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return null;
  const keys = (body as { keys?: unknown }).keys;
  if (!Array.isArray(keys)) return null;
  const out: JWK[] = [];
  for (const key of keys) {
    if (out.length >= MAX_JWKS_KEYS) break;
    if (typeof key !== "object" || key === null || Array.isArray(key)) continue;
    const jwk = key as Record<string, unknown>;
    if (typeof jwk.kty !== "string" || !PUBLIC_KTY.has(jwk.kty)) continue;
    if (jwk.use !== undefined && jwk.use !== "sig") continue;
    if (PRIVATE_MEMBERS.some((member) => member in jwk)) continue;
    out.push(jwk as JWK);
  }
  return out;
}

/** A snapshot of `keys` fetched (or configured) at `fetchedAtMs`. */
export function jwksSnapshot(keys: readonly JWK[], fetchedAtMs: number): JwksSnapshot {
  const set: JSONWebKeySet = { keys: [...keys] };
  return { keys, fetchedAtMs, getKey: createLocalJWKSet(set) };
}

async function readBounded(response: Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    await response.body?.cancel();
    throw new JwksFetchError("too_large");
  }
  if (response.body === null) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new JwksFetchError("too_large");
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

export class JwksCache {
  readonly #options: Required<Omit<JwksCacheOptions, "onFailure">> & Pick<JwksCacheOptions, "onFailure">;
  readonly #urls = new Map<string, UrlState>();

  constructor(options: JwksCacheOptions) {
    this.#options = { joinPatienceMs: JWKS_FETCH_TIMEOUT_MS, ...options };
  }

  /**
   * The set to verify with at `nowMs`: fresh from the cache, else fetched (or
   * another request's fetch joined). Null when no usable set exists: never
   * fetched and the fetch failed, or the last good set is past staleIfErrorMs.
   * Never throws.
   */
  async current(url: string, nowMs: number, keepAlive?: KeepAlive): Promise<JwksSnapshot | null> {
    const state = this.#state(url);
    const set = state.set;
    if (set !== null && nowMs < set.fetchedAtMs + this.#options.ttlMs) return set;
    const stale = this.#usableStale(state, nowMs);
    if (state.flight !== null) return stale ?? (await this.#join(url, state, state.flight, nowMs, keepAlive));
    if (nowMs < state.retryAfterMs) return stale;
    return (await this.#fetch(url, state, nowMs, keepAlive)) ?? this.#usableStale(state, nowMs);
  }

  /**
   * A newer set after a token named a `kid` that `seen` lacks: the set another
   * request already fetched, or a refetch when the last fetch started at least
   * JWKS_REFETCH_MIN_MS ago. Null when throttled or the refetch failed (the
   * token is then invalid: the kid is unknown). Never throws.
   */
  async refreshForUnknownKid(url: string, seen: JwksSnapshot, nowMs: number, keepAlive?: KeepAlive): Promise<JwksSnapshot | null> {
    const state = this.#state(url);
    if (state.set !== null && state.set !== seen && state.set.fetchedAtMs >= seen.fetchedAtMs) return state.set;
    if (state.flight !== null) return this.#join(url, state, state.flight, nowMs, keepAlive);
    if (nowMs - state.lastAttemptMs < JWKS_REFETCH_MIN_MS) return null;
    return this.#fetch(url, state, nowMs, keepAlive);
  }

  /** URLs with state (at most the configured ones). */
  get size(): number {
    return this.#urls.size;
  }

  #state(url: string): UrlState {
    let state = this.#urls.get(url);
    if (state === undefined) {
      state = { set: null, flight: null, lastAttemptMs: Number.NEGATIVE_INFINITY, retryAfterMs: Number.NEGATIVE_INFINITY };
      this.#urls.set(url, state);
    }
    return state;
  }

  #usableStale(state: UrlState, nowMs: number): JwksSnapshot | null {
    const set = state.set;
    return set !== null && nowMs < set.fetchedAtMs + this.#options.ttlMs + this.#options.staleIfErrorMs ? set : null;
  }

  async #join(url: string, state: UrlState, flight: Flight, nowMs: number, keepAlive: KeepAlive | undefined, rejoin = true): Promise<JwksSnapshot | null> {
    const joined = await joinWithin(flight.promise, this.#options.joinPatienceMs);
    if (joined.settled) return joined.value;
    // Its request is presumed gone (its fetch would have timed out by now).
    // Another waiter that gave up first may have fetched meanwhile (use its
    // set) or be fetching (join that, once); otherwise forget the dead fetch
    // and fetch for ourselves.
    if (state.flight === flight) state.flight = null;
    if (state.set !== null && nowMs < state.set.fetchedAtMs + this.#options.ttlMs) return state.set;
    if (state.flight !== null) return rejoin ? this.#join(url, state, state.flight, nowMs, keepAlive, false) : this.#usableStale(state, nowMs);
    return this.#fetch(url, state, nowMs, keepAlive);
  }

  async #fetch(url: string, state: UrlState, nowMs: number, keepAlive: KeepAlive | undefined): Promise<JwksSnapshot | null> {
    state.lastAttemptMs = nowMs;
    const flight: Flight = { promise: this.#load(url, state, nowMs) };
    state.flight = flight;
    keepAlive?.(flight.promise);
    try {
      return await flight.promise;
    } finally {
      if (state.flight === flight) state.flight = null;
    }
  }

  async #load(url: string, state: UrlState, nowMs: number): Promise<JwksSnapshot | null> {
    let snapshot: JwksSnapshot;
    try {
      snapshot = jwksSnapshot(await this.#download(url), nowMs);
    } catch (error) {
      state.retryAfterMs = nowMs + JWKS_ERROR_RETRY_MS;
      this.#options.onFailure?.(url, error instanceof JwksFetchError ? error.reason : "network");
      return null;
    }
    // A late fetch (its waiters gave up on it) is still kept unless a newer one landed first.
    if (state.set === null || state.set.fetchedAtMs <= nowMs) state.set = snapshot;
    state.retryAfterMs = Number.NEGATIVE_INFINITY;
    return snapshot;
  }

  async #download(url: string): Promise<JWK[]> {
    // Called unbound: workerd's fetch refuses `this` being anything but the global.
    const fetchJwks = this.#options.fetch;
    const response = await fetchJwks(url, { signal: AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS) });
    if (response.status !== 200) {
      await response.body?.cancel();
      // A redirect is a failure, never followed: the configured URL is the one vouched for.
      throw new JwksFetchError(response.status >= 300 && response.status < 400 ? "redirect" : "status");
    }
    const text = await readBounded(response, MAX_JWKS_BYTES);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new JwksFetchError("not_json");
    }
    const keys = usableJwks(body);
    if (keys === null) throw new JwksFetchError("not_json");
    if (keys.length === 0) throw new JwksFetchError("no_usable_keys");
    return keys;
  }
}

/**
 * The gateway's fetch for JWKS: no cookies or credentials, JSON asked for, and
 * redirects not followed (a 3xx fails the fetch): the keys that vouch for
 * callers come from the configured URL only, not from wherever it points.
 */
export const defaultJwksFetch: JwksFetch = (url, init) => fetch(url, { signal: init.signal, headers: { accept: "application/json" }, redirect: "manual" });

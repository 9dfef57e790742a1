// A per-isolate read-through cache: bounded in entries, a TTL,
// one load in flight per key (concurrent misses share it), negative entries
// kept in their own smaller bound (so a flood of unknown keys cannot push the
// known ones out), and the last-known value served for up to staleIfErrorMs
// past its expiry when the loader throws. Time comes in as `nowMs` so tests
// drive it.
//
// Single flight holds when the store is slow (issue 10 item 9): there is at
// most one load per key in flight; a finished load is always stored (unless a
// clear() came meanwhile); a request that finds a load running and holds a
// stale value serves that value at once rather than waiting or loading again.
// A load belongs to the request that started it, and workerd cancels a
// request's I/O when its client goes away, after which the load would never
// settle and its joiners would hang: so the starter hands the load to
// `keepAlive` (the request's waitUntil), which keeps it running to the end.
// A load older than MAX_FLIGHT_MS is presumed dead anyway (its context was
// torn down) and replaced.

export interface ReadThroughCacheOptions<V> {
  /** Most positive entries held; the least recently used is evicted first. */
  readonly maxEntries: number;
  /** Most negative entries held (values for which isNegative is true). */
  readonly maxNegativeEntries: number;
  /** How long a loaded value is served without asking the loader again. */
  readonly ttlMs: number;
  /** How long past its expiry a value is still served while the loader fails. */
  readonly staleIfErrorMs: number;
  /** Which values are "not found" answers. Default: null. */
  readonly isNegative?: (value: V) => boolean;
  /** After a failed load served stale, how long before the loader is tried again. Default min(ttlMs, 1000). */
  readonly errorRetryMs?: number;
}

interface Entry<V> {
  value: V;
  /** Served without a load until then. */
  freshUntilMs: number;
  /** Served when the loader fails until then. */
  staleUntilMs: number;
}

interface Flight<V> {
  promise: Promise<V>;
  startedAtMs: number;
}

/** Past this a load in flight is presumed dead (the runtime gives background work 30 s after a response). */
export const MAX_FLIGHT_MS = 30_000;

export class ReadThroughCache<K, V> {
  readonly #options: Required<ReadThroughCacheOptions<V>>;
  readonly #positive = new Map<K, Entry<V>>();
  readonly #negative = new Map<K, Entry<V>>();
  readonly #flights = new Map<K, Flight<V>>();

  constructor(options: ReadThroughCacheOptions<V>) {
    this.#options = {
      isNegative: (value: V) => value === null,
      errorRetryMs: Math.min(options.ttlMs, 1000),
      ...options,
    };
  }

  get size(): number {
    return this.#positive.size + this.#negative.size;
  }

  /** The value for `key` when it is fresh at `nowMs`, else undefined. Never loads. */
  peek(key: K, nowMs: number): V | undefined {
    const entry = this.#positive.get(key) ?? this.#negative.get(key);
    return entry !== undefined && nowMs < entry.freshUntilMs ? entry.value : undefined;
  }

  /**
   * The value for `key`: fresh from the cache, else from the one load in
   * flight for it, else from `load`. A caller that finds a load running and
   * holds a value not older than staleIfErrorMs past its expiry gets that
   * value at once. When `load` throws, the last-known value is returned if it
   * expired less than staleIfErrorMs ago; otherwise the error is rethrown and
   * nothing is cached. `keepAlive` receives a load this call starts, so it
   * finishes even if the caller's request is cancelled.
   */
  async get(key: K, nowMs: number, load: () => Promise<V>, keepAlive?: (work: Promise<unknown>) => void): Promise<V> {
    const entry = this.#positive.get(key) ?? this.#negative.get(key);
    if (entry !== undefined && nowMs < entry.freshUntilMs) {
      this.#touch(key, entry);
      return entry.value;
    }
    const running = this.#flights.get(key);
    if (running !== undefined && nowMs - running.startedAtMs < MAX_FLIGHT_MS) {
      if (entry !== undefined && nowMs < entry.staleUntilMs) return entry.value;
      return running.promise;
    }
    const flight: Flight<V> = { promise: Promise.resolve(undefined as V), startedAtMs: nowMs };
    flight.promise = this.#load(key, nowMs, load, entry, flight);
    this.#flights.set(key, flight);
    const done = flight.promise.finally(() => {
      if (this.#flights.get(key) === flight) this.#flights.delete(key);
    });
    keepAlive?.(done);
    return done;
  }

  async #load(key: K, nowMs: number, load: () => Promise<V>, previous: Entry<V> | undefined, flight: Flight<V>): Promise<V> {
    let value: V;
    try {
      value = await load();
    } catch (error) {
      if (previous !== undefined && nowMs < previous.staleUntilMs) {
        // Serve the last-known value, and do not ask the failing store again for a moment.
        if (this.#current(key) === previous) previous.freshUntilMs = Math.min(nowMs + this.#options.errorRetryMs, previous.staleUntilMs);
        return previous.value;
      }
      throw error;
    }
    // A clear() while this load ran means the value may predate the write that
    // cleared it: answer this request with it, but do not keep it.
    if (this.#flights.get(key) === flight) this.#store(key, value, nowMs);
    return value;
  }

  #current(key: K): Entry<V> | undefined {
    return this.#positive.get(key) ?? this.#negative.get(key);
  }

  #store(key: K, value: V, nowMs: number): void {
    this.#positive.delete(key);
    this.#negative.delete(key);
    const negative = this.#options.isNegative(value);
    const map = negative ? this.#negative : this.#positive;
    const max = negative ? this.#options.maxNegativeEntries : this.#options.maxEntries;
    if (max <= 0) return;
    while (map.size >= max) {
      const oldest = map.keys().next();
      if (oldest.done === true) break;
      map.delete(oldest.value);
    }
    const freshUntilMs = nowMs + this.#options.ttlMs;
    map.set(key, { value, freshUntilMs, staleUntilMs: freshUntilMs + this.#options.staleIfErrorMs });
  }

  /** Move a hit to the young end of its map, so eviction takes the least recently used. */
  #touch(key: K, entry: Entry<V>): void {
    const map = this.#positive.get(key) === entry ? this.#positive : this.#negative;
    map.delete(key);
    map.set(key, entry);
  }

  /** Forget `key`, including a load in flight (its result is not kept). */
  clear(key: K): void {
    this.#positive.delete(key);
    this.#negative.delete(key);
    this.#flights.delete(key);
  }

  /** Forget every entry whose value matches, and every load in flight (their values are unknown yet). */
  clearWhere(matches: (value: V, key: K) => boolean): void {
    for (const map of [this.#positive, this.#negative]) {
      for (const [key, entry] of map) if (matches(entry.value, key)) map.delete(key);
    }
    this.#flights.clear();
  }

  clearAll(): void {
    this.#positive.clear();
    this.#negative.clear();
    this.#flights.clear();
  }
}

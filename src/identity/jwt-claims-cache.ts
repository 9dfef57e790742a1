// Tokens verified recently, by the token string itself: a hot
// JWT caller pays a Map lookup, not a signature check, and nothing is hashed
// or awaited. Expiry is still checked on every use, with the same arithmetic
// jose applies (so a cached token expires at the very millisecond a fresh
// verification would call it expired), and an entry is dropped when it is
// seen past its expiry.
//
// Bounded twice: at most `maxEntries` tokens and `maxChars` characters of
// token strings (tokens may be up to 8 KiB, so a count alone would allow
// 80 MB). Eviction is "second chance": the oldest entry goes, unless it was
// used since it was last considered, in which case it moves to the young end
// once. A hit costs one flag write, not a Map reordering.

/** Tokens held. */
export const DEFAULT_MAX_CACHED_TOKENS = 10_000;
/** Characters of token strings held in all: 4 Mi characters, 4 MiB as V8 one-byte strings (about 4,000 tokens of 1 KB). */
export const DEFAULT_MAX_CACHED_TOKEN_CHARS = 4 * 1024 * 1024;
/** Eviction gives at most this many used entries a second chance before evicting regardless: bounded work per insert. */
const MAX_SECOND_CHANCES = 8;

interface Entry<V> {
  readonly value: V;
  /** Before this instant the token is not yet valid (its nbf, with the skew): not served from here. */
  readonly validFromMs: number;
  /** From this instant the token is expired (its exp, with the skew). */
  readonly expiredAtMs: number;
  /** From this instant the entry is no longer served (its signature is checked again), though the token has not expired. */
  readonly reverifyAtMs: number;
  used: boolean;
}

/** What lookup answers for a token that is cached but expired. */
export const EXPIRED = "expired";

export class JwtClaimsCache<V extends object> {
  readonly #entries = new Map<string, Entry<V>>();
  readonly #maxEntries: number;
  readonly #maxChars: number;
  #chars = 0;

  constructor(maxEntries: number = DEFAULT_MAX_CACHED_TOKENS, maxChars: number = DEFAULT_MAX_CACHED_TOKEN_CHARS) {
    this.#maxEntries = maxEntries;
    this.#maxChars = maxChars;
  }

  get size(): number {
    return this.#entries.size;
  }

  get chars(): number {
    return this.#chars;
  }

  /**
   * The cached value for `token` at `nowMs`, EXPIRED when the token was
   * verified but has expired since (the entry is dropped), or undefined.
   * Synchronous, allocates nothing, hashes nothing beyond the Map's own.
   */
  lookup(token: string, nowMs: number): V | typeof EXPIRED | undefined {
    const entry = this.#entries.get(token);
    if (entry === undefined) return undefined;
    if (nowMs >= entry.expiredAtMs) {
      this.#delete(token);
      return EXPIRED;
    }
    if (nowMs >= entry.reverifyAtMs || nowMs < entry.validFromMs) {
      this.#delete(token);
      return undefined;
    }
    entry.used = true;
    return entry.value;
  }

  /** Keep `value` for `token` until `expiredAtMs` (or `reverifyAtMs`, if sooner). A token longer than the char bound is not kept. */
  store(token: string, value: V, window: { validFromMs: number; expiredAtMs: number; reverifyAtMs: number }): void {
    if (token.length > this.#maxChars || this.#maxEntries <= 0) return;
    this.#delete(token);
    let chances = 0;
    while (this.#entries.size >= this.#maxEntries || this.#chars + token.length > this.#maxChars) {
      const oldest = this.#entries.entries().next();
      if (oldest.done === true) break;
      const [key, entry] = oldest.value;
      this.#entries.delete(key);
      if (entry.used && chances < MAX_SECOND_CHANCES) {
        chances += 1;
        entry.used = false;
        this.#entries.set(key, entry);
      } else {
        this.#chars -= key.length;
      }
    }
    this.#entries.set(token, { value, ...window, used: false });
    this.#chars += token.length;
  }

  #delete(token: string): void {
    if (this.#entries.delete(token)) this.#chars -= token.length;
  }

  clear(): void {
    this.#entries.clear();
    this.#chars = 0;
  }
}

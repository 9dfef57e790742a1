// The deployment's key-check HMAC key, per runtime. The secret never changes
// once made, so a loaded key is kept for the runtime's life; "no secret yet"
// (no key was ever minted) is rechecked after cache_ttl_s. D1 failing with
// nothing loaded throws: the caller answers 503 auth_unavailable. One load in
// flight at a time, kept alive past its request (see read-through-cache.ts).
import type { Db } from "../db/client";
import { ensureSetting, getSetting, KEY_CHECK_SECRET } from "../db/settings";
import { newKeyCheckSecret } from "../identity/api-key";
import { deriveAuditSubjectKey } from "../identity/audit-subject";
import { importHmacKey } from "../utils/crypto";
import { MAX_FLIGHT_MS } from "./read-through-cache";

export class KeyCheckLoader {
  readonly #absentTtlMs: number;
  #loaded: CryptoKey | null = null;
  #absentUntilMs = 0;
  #loading: { promise: Promise<CryptoKey | null>; startedAtMs: number } | null = null;
  #auditKey: Promise<CryptoKey> | null = null;

  constructor(absentTtlMs: number) {
    this.#absentTtlMs = absentTtlMs;
  }

  /** The check key if it is loaded (or known absent), without waiting; undefined when a load is needed. */
  peek(nowMs: number): CryptoKey | null | undefined {
    if (this.#loaded !== null) return this.#loaded;
    return nowMs < this.#absentUntilMs ? null : undefined;
  }

  /** The check key, or null when no key was ever minted. */
  load(db: () => Db, nowMs: number, keepAlive?: (work: Promise<unknown>) => void): Promise<CryptoKey | null> {
    const known = this.peek(nowMs);
    if (known !== undefined) return Promise.resolve(known);
    const running = this.#loading;
    if (running !== null && nowMs - running.startedAtMs < MAX_FLIGHT_MS) return running.promise;
    const flight = { promise: this.#read(db, nowMs), startedAtMs: nowMs };
    this.#loading = flight;
    const done = flight.promise.finally(() => {
      if (this.#loading === flight) this.#loading = null;
    });
    keepAlive?.(done);
    return done;
  }

  async #read(db: () => Db, nowMs: number): Promise<CryptoKey | null> {
    const secret = await getSetting(db(), KEY_CHECK_SECRET);
    if (secret === null) {
      this.#absentUntilMs = nowMs + this.#absentTtlMs;
      return null;
    }
    this.#loaded = await importHmacKey(secret);
    return this.#loaded;
  }

  /**
   * The key of audit-subject digests (src/identity/audit-subject.ts), derived
   * once from the check key. `create`: make the deployment's secret if no key
   * was ever minted (a write); otherwise null when there is none (a read).
   */
  async auditKey(db: Db, nowMs: number, create: boolean): Promise<CryptoKey | null> {
    if (this.#auditKey !== null) return this.#auditKey;
    const checkKey = create ? await this.forWrite(db, nowMs) : await this.load(() => db, nowMs);
    if (checkKey === null) return null;
    this.#auditKey ??= deriveAuditSubjectKey(checkKey);
    return this.#auditKey;
  }

  /** For minting and audit digests: the check key, creating the deployment's secret on first use. */
  async forWrite(db: Db, nowMs: number): Promise<CryptoKey> {
    if (this.#loaded !== null) return this.#loaded;
    const secret = await ensureSetting(db, KEY_CHECK_SECRET, newKeyCheckSecret(), nowMs);
    this.#loaded = await importHmacKey(secret);
    this.#absentUntilMs = 0;
    return this.#loaded;
  }
}

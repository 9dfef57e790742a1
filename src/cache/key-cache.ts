// The runtime's cache of managed keys by digest: the key's record joined with
// its tenant's limits and quota, compiled once per load. Unknown digests are
// cached as negative entries. Beside it, a small map from a presented key
// string to its digest, filled only for keys that were found, so a key seen
// recently is admitted without hashing.
import type { Config } from "../config";
import type { TenantInfo } from "../exchange";
import type { KeyLimits } from "../engine/resolve-limits";
import type { Db } from "../db/client";
import { findKeyByDigest, type KeyRow } from "../db/keys";
import { ReadThroughCache } from "./read-through-cache";
import type { LimitScope } from "../engine/limit";
import { compileStoredKeyLimits, compileStoredTenant } from "./stored-limits";
import type { BudgetCategories } from "../exchange";
import { compileStoredBudgets } from "./stored-budgets";

/** A managed key as the gateway admits it. Limits are compiled. */
export interface KeyRecord {
  readonly keyId: string;
  readonly digest: string;
  readonly expiresAtMs: number | null;
  readonly revokedAtMs: number | null;
  readonly keyLimits: KeyLimits | null;
  /** Categories the key has a budget of, or null. */
  readonly keyBudgets: BudgetCategories;
  readonly tenant: TenantInfo;
}

/** Negative entries get a quarter of the bound: unknown keys cannot crowd out known ones. */
const NEGATIVE_SHARE = 0.25;

async function loadKey(db: Db, digest: string, defaultScope: LimitScope): Promise<KeyRecord | null> {
  const row = await findKeyByDigest(db, digest);
  return row === null ? null : keyRecordOf(row, digest, defaultScope);
}

/** A key row from D1 (joined with its tenant and org) compiled as the gateway admits it (a limit naming no scope takes `defaultScope`). */
export function keyRecordOf(row: KeyRow, digest: string, defaultScope: LimitScope): KeyRecord {
  return {
    keyId: row.id,
    digest,
    expiresAtMs: row.expiresAt,
    revokedAtMs: row.revokedAt,
    keyLimits: compileStoredKeyLimits(row.keyLimits, `api_keys.limits of ${row.id}`, defaultScope),
    keyBudgets: compileStoredBudgets(row.keyBudgets, `api_keys.budgets of ${row.id}`),
    tenant: compileStoredTenant({ slug: row.tenant, limits: row.tenantLimits, quota: row.quota, org: row.org, orgQuota: row.orgQuota, budgets: row.tenantBudgets, orgBudgets: row.orgBudgets }, defaultScope),
  };
}

export class KeyCache {
  readonly #cache: ReadThroughCache<string, KeyRecord | null>;
  readonly #recentDigests = new Map<string, string>();
  readonly #maxEntries: number;
  readonly #defaultScope: LimitScope;

  constructor(config: Config) {
    this.#maxEntries = config.cacheMaxEntries;
    this.#defaultScope = config.defaultScope;
    this.#cache = new ReadThroughCache<string, KeyRecord | null>({
      maxEntries: config.cacheMaxEntries,
      maxNegativeEntries: Math.max(1, Math.floor(config.cacheMaxEntries * NEGATIVE_SHARE)),
      ttlMs: config.cacheTtlMs,
      staleIfErrorMs: config.staleIfErrorMs,
    });
  }

  /**
   * The key with this digest, or null when there is none (or its tenant is
   * gone). Read through the cache: a fresh entry costs no query. Throws when D1
   * fails and no value younger than stale_if_error_s past its expiry is held;
   * the caller answers 503 auth_unavailable. `db` is only called on a miss.
   */
  lookup(db: () => Db, digest: string, nowMs: number, keepAlive?: (work: Promise<unknown>) => void): Promise<KeyRecord | null> {
    return this.#cache.get(digest, nowMs, () => loadKey(db(), digest, this.#defaultScope), keepAlive);
  }

  /** The record for this digest when it is fresh in the cache; never queries. */
  peek(digest: string, nowMs: number): KeyRecord | null | undefined {
    return this.#cache.peek(digest, nowMs);
  }

  /** The digest remembered for a presented key string, if it was verified recently. */
  rememberedDigest(credential: string): string | undefined {
    return this.#recentDigests.get(credential);
  }

  /** Remember a presented key string's digest after it was found, so its next request hashes nothing. Bounded like the cache. */
  rememberDigest(credential: string, digest: string): void {
    const recent = this.#recentDigests;
    if (recent.has(credential)) return;
    while (recent.size >= this.#maxEntries) {
      const oldest = recent.keys().next();
      if (oldest.done === true) break;
      recent.delete(oldest.value);
    }
    recent.set(credential, digest);
  }

  /** Forget the cached records of keys with this id (an admin revoked or changed it). */
  clearKeyId(keyId: string): void {
    this.#cache.clearWhere((record) => record !== null && record.keyId === keyId);
  }

  /** Forget the cached records of every key of this tenant (its limits, quota or existence changed). */
  clearTenant(tenant: string): void {
    this.#cache.clearWhere((record) => record !== null && record.tenant.slug === tenant);
  }

  /** Forget the cached record (or negative entry) for this digest (a key was minted with it). */
  clearDigest(digest: string): void {
    this.#cache.clear(digest);
  }

  clearAll(): void {
    this.#cache.clearAll();
    this.#recentDigests.clear();
  }
}

// The isolate's cache of managed keys by digest: the key's record joined with
// its tenant's limits and quota, compiled once per load. Unknown digests are
// cached as negative entries. Beside it, a small map from a presented key
// string to its digest, filled only for keys that were found, so a key seen
// recently is admitted without hashing (DESIGN §1).
import type { Config } from "../config";
import type { QuotaLimits } from "../durable/quota-types";
import type { KeyLimits, TenantLimits } from "../engine/resolve-limits";
import type { Db } from "../db/client";
import { findKeyByDigest } from "../db/keys";
import { ReadThroughCache } from "./read-through-cache";
import { compileStoredKeyLimits, compileStoredTenantLimits, parseStoredQuota } from "./stored-limits";

/** A managed key as the gateway admits it. Limits are compiled. */
export interface KeyRecord {
  readonly keyId: string;
  readonly digest: string;
  readonly tenant: string;
  readonly expiresAtMs: number | null;
  readonly revokedAtMs: number | null;
  readonly keyLimits: KeyLimits | null;
  readonly tenantLimits: TenantLimits | null;
  readonly quota: QuotaLimits | null;
}

/** Negative entries get a quarter of the bound: unknown keys cannot crowd out known ones. */
const NEGATIVE_SHARE = 0.25;

let cache: ReadThroughCache<string, KeyRecord | null> | null = null;
let cacheSettings = "";
const recentDigests = new Map<string, string>();

function keyCache(config: Config): ReadThroughCache<string, KeyRecord | null> {
  const settings = `${config.cacheMaxEntries}/${config.cacheTtlMs}/${config.staleIfErrorMs}`;
  if (cache === null || settings !== cacheSettings) {
    cache = new ReadThroughCache<string, KeyRecord | null>({
      maxEntries: config.cacheMaxEntries,
      maxNegativeEntries: Math.max(1, Math.floor(config.cacheMaxEntries * NEGATIVE_SHARE)),
      ttlMs: config.cacheTtlMs,
      staleIfErrorMs: config.staleIfErrorMs,
    });
    cacheSettings = settings;
    recentDigests.clear();
  }
  return cache;
}

async function loadKey(db: Db, digest: string): Promise<KeyRecord | null> {
  const row = await findKeyByDigest(db, digest);
  if (row === null) return null;
  return {
    keyId: row.id,
    digest,
    tenant: row.tenant,
    expiresAtMs: row.expiresAt,
    revokedAtMs: row.revokedAt,
    keyLimits: compileStoredKeyLimits(row.keyLimits, `api_keys.limits of ${row.id}`),
    tenantLimits: compileStoredTenantLimits(row.tenantLimits, `tenants.limits of ${row.tenant}`),
    quota: parseStoredQuota(row.quota, `tenants.quota of ${row.tenant}`),
  };
}

/**
 * The key with this digest, or null when there is none (or its tenant is
 * gone). Read through the cache: a fresh entry costs no query. Throws when D1
 * fails and no value younger than stale_if_error_s past its expiry is held;
 * the caller answers 503 auth_unavailable. `db` is only called on a miss.
 */
export function lookupKey(db: () => Db, digest: string, config: Config, nowMs: number): Promise<KeyRecord | null> {
  return keyCache(config).get(digest, nowMs, () => loadKey(db(), digest));
}

/** The record for this digest when it is fresh in the cache; never queries. */
export function peekKey(digest: string, config: Config, nowMs: number): KeyRecord | null | undefined {
  return keyCache(config).peek(digest, nowMs);
}

/** The digest remembered for a presented key string, if it was verified recently. */
export function rememberedDigest(credential: string): string | undefined {
  return recentDigests.get(credential);
}

/** Remember a presented key string's digest after it was found, so its next request hashes nothing. Bounded like the cache. */
export function rememberDigest(credential: string, digest: string, config: Config): void {
  if (recentDigests.has(credential)) return;
  while (recentDigests.size >= config.cacheMaxEntries) {
    const oldest = recentDigests.keys().next();
    if (oldest.done === true) break;
    recentDigests.delete(oldest.value);
  }
  recentDigests.set(credential, digest);
}

/** Forget the cached records of keys with this id (an admin revoked or changed it). */
export function clearKeyById(keyId: string): void {
  cache?.clearWhere((record) => record !== null && record.keyId === keyId);
}

/** Forget the cached records of every key of this tenant (its limits, quota or existence changed). */
export function clearKeysOfTenant(tenant: string): void {
  cache?.clearWhere((record) => record !== null && record.tenant === tenant);
}

/** Forget the cached record (or negative entry) for this digest (a key was minted with it). */
export function clearKeyDigest(digest: string): void {
  cache?.clear(digest);
}

/** Forget every key record and remembered digest. */
export function clearKeyCache(): void {
  cache?.clearAll();
  recentDigests.clear();
}

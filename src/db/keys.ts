// Query helpers for api_keys. Timestamps are Unix milliseconds, as in the schema.
import { and, asc, count, eq, inArray, isNull, sql } from "drizzle-orm";
import type { Db } from "./client";
import { apiKeys, orgs, tenants } from "./schema";

/** What the gateway needs to admit a key: the key row joined with its tenant. */
export interface KeyRow {
  readonly id: string;
  readonly tenant: string;
  readonly expiresAt: number | null;
  readonly revokedAt: number | null;
  /** KeyLimits JSON or null. */
  readonly keyLimits: string | null;
  /** TenantLimits JSON. */
  readonly tenantLimits: string;
  /** Quota JSON. */
  readonly quota: string;
  /** The tenant's org, or null. */
  readonly org: string | null;
  /** The org's Quota JSON; null when the tenant has no org. */
  readonly orgQuota: string | null;
  /** Budgets JSON of the key, its tenant and its org (null: none). */
  readonly keyBudgets: string | null;
  readonly tenantBudgets: string | null;
  readonly orgBudgets: string | null;
}

/**
 * The key whose digest is `digest`, with its tenant's limits and quota and
 * its tenant's org and the org's quota, or null. One indexed query (api_keys_digest_unique). A key whose tenant is
 * gone is not found (the inner join), so it stops working even before the
 * cascade removes it.
 */
export async function findKeyByDigest(db: Db, digest: string): Promise<KeyRow | null> {
  const rows = await gatewayKeyQuery(db).where(eq(apiKeys.digest, digest)).limit(1);
  return rows[0] ?? null;
}

/** The same record by key id, with its digest (the limiter subject): for the admin API's explain and reset. */
export async function findKeyById(db: Db, id: string): Promise<(KeyRow & { readonly digest: string }) | null> {
  const rows = await gatewayKeyQuery(db).where(eq(apiKeys.id, id)).limit(1);
  return rows[0] ?? null;
}

/** Key ids and tenants by digest (the `key:<digest>` limiter subject), for the names of a report; at most 90 digests per call (D1's bound on parameters). */
export function keysByDigests(db: Db, digests: readonly string[]): Promise<{ id: string; tenant: string; digest: string }[]> {
  if (digests.length === 0) return Promise.resolve([]);
  return db.select({ id: apiKeys.id, tenant: apiKeys.tenant, digest: apiKeys.digest }).from(apiKeys).where(inArray(apiKeys.digest, [...digests]));
}

function gatewayKeyQuery(db: Db) {
  return db
    .select({
      id: apiKeys.id,
      digest: apiKeys.digest,
      tenant: apiKeys.tenant,
      expiresAt: apiKeys.expiresAt,
      revokedAt: apiKeys.revokedAt,
      keyLimits: apiKeys.limits,
      tenantLimits: tenants.limits,
      quota: tenants.quota,
      org: tenants.org,
      orgQuota: orgs.quota,
      keyBudgets: apiKeys.budgets,
      tenantBudgets: tenants.budgets,
      orgBudgets: orgs.budgets,
    })
    .from(apiKeys)
    .innerJoin(tenants, eq(tenants.slug, apiKeys.tenant))
    .leftJoin(orgs, eq(orgs.slug, tenants.org));
}

/** The columns a listing shows: never the digest. */
export const keyListingColumns = {
  id: apiKeys.id,
  tenant: apiKeys.tenant,
  name: apiKeys.name,
  prefix: apiKeys.prefix,
  createdAt: apiKeys.createdAt,
  expiresAt: apiKeys.expiresAt,
  revokedAt: apiKeys.revokedAt,
  limits: apiKeys.limits,
  lastUsedAt: apiKeys.lastUsedAt,
  lastUsedFrom: apiKeys.lastUsedFrom,
  useCount: apiKeys.useCount,
} as const;

export interface KeyListingRow {
  readonly id: string;
  readonly tenant: string;
  readonly name: string;
  readonly prefix: string;
  readonly createdAt: number;
  readonly expiresAt: number | null;
  readonly revokedAt: number | null;
  readonly limits: string | null;
  readonly lastUsedAt: number | null;
  readonly lastUsedFrom: string | null;
  readonly useCount: number;
}

export function listKeys(db: Db, tenant: string): Promise<KeyListingRow[]> {
  return db.select(keyListingColumns).from(apiKeys).where(eq(apiKeys.tenant, tenant)).orderBy(asc(apiKeys.createdAt), asc(apiKeys.id));
}

export async function getKey(db: Db, id: string): Promise<KeyListingRow | null> {
  const rows = await db.select(keyListingColumns).from(apiKeys).where(eq(apiKeys.id, id)).limit(1);
  return rows[0] ?? null;
}

export interface NewKey {
  readonly id: string;
  readonly tenant: string;
  readonly name: string;
  readonly digest: string;
  readonly prefix: string;
  readonly createdAt: number;
  readonly expiresAt: number | null;
  readonly limits: string | null;
}

/** The insert, for a batch. */
export function insertKey(db: Db, key: NewKey) {
  return db.insert(apiKeys).values({ ...key, useCount: 0 });
}

/** Marks a key revoked at `atMs` unless it already is (the first revocation time stands), for a batch. */
export function revokeKey(db: Db, id: string, atMs: number) {
  return db.update(apiKeys).set({ revokedAt: atMs }).where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt)));
}

export async function countKeysOfTenant(db: Db, tenant: string): Promise<number> {
  const rows = await db.select({ n: count() }).from(apiKeys).where(eq(apiKeys.tenant, tenant));
  return rows[0]?.n ?? 0;
}

/** Deletes a tenant's keys (the FK cascade does the same; explicit so the batch does not depend on PRAGMA foreign_keys). */
export function deleteKeysOfTenant(db: Db, tenant: string) {
  return db.delete(apiKeys).where(eq(apiKeys.tenant, tenant));
}

export interface KeyUsage {
  readonly id: string;
  /** Requests since the last flush. */
  readonly count: number;
  readonly lastUsedAtMs: number;
  readonly lastUsedFrom: string;
}

/**
 * Adds a flushed usage record to its key, for a batch. Flushes from several
 * isolates interleave, so the last-used time only moves forward and the
 * address goes with whichever time wins.
 */
export function addKeyUsage(db: Db, usage: KeyUsage) {
  return db
    .update(apiKeys)
    .set({
      useCount: sql`${apiKeys.useCount} + ${usage.count}`,
      lastUsedFrom: sql`CASE WHEN ${apiKeys.lastUsedAt} IS NULL OR ${apiKeys.lastUsedAt} <= ${usage.lastUsedAtMs} THEN ${usage.lastUsedFrom} ELSE ${apiKeys.lastUsedFrom} END`,
      lastUsedAt: sql`max(coalesce(${apiKeys.lastUsedAt}, 0), ${usage.lastUsedAtMs})`,
    })
    .where(eq(apiKeys.id, usage.id));
}

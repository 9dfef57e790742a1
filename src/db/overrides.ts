// Query helpers for caller_overrides: limits for one caller key (`ip:<address
// or /64>`, `key:<id>`, `jwt:<64 hex>`), optionally until `expires_at`. The
// gateway reads the rows in force at once, with the blocks (see
// src/cache/policy-cache.ts); the table is small, one row per caller an
// operator singled out.
import { asc, eq, gt, inArray, isNull, or, sql } from "drizzle-orm";
import type { Db } from "./client";
import { apiKeys, callerOverrides } from "./schema";

export interface OverrideRow {
  readonly callerKey: string;
  /** KeyLimits JSON. */
  readonly limits: string;
  readonly updatedAt: number;
  /** First Unix ms at which the override no longer applies (src/db/expiry.ts); null: never. */
  readonly expiresAt: number | null;
  readonly reason: string | null;
}

/**
 * Every override, with `expiresAt`; with `nowMs`, only those in force then
 * (activeOverridesQuery, which the gateway's snapshot batches with the blocks).
 */
export function loadAllOverrides(db: Db, nowMs?: number): Promise<OverrideRow[]> {
  return nowMs === undefined ? db.select().from(callerOverrides) : activeOverridesQuery(db, nowMs);
}

/** The overrides in force at `nowMs`, as a query for a batch (the gateway reads them with the blocks in one round trip). */
export function activeOverridesQuery(db: Db, nowMs: number) {
  return db.select().from(callerOverrides).where(or(isNull(callerOverrides.expiresAt), gt(callerOverrides.expiresAt, nowMs)));
}

export async function getOverride(db: Db, callerKey: string): Promise<OverrideRow | null> {
  const rows = await db.select().from(callerOverrides).where(eq(callerOverrides.callerKey, callerKey)).limit(1);
  return rows[0] ?? null;
}

/** Overrides in caller-key order after `afterKey` (keyset paging, BINARY collation), at most `limit`. */
export function listOverrides(db: Db, page: { afterKey?: string | undefined; limit: number }): Promise<OverrideRow[]> {
  return db
    .select()
    .from(callerOverrides)
    .where(page.afterKey === undefined ? undefined : gt(callerOverrides.callerKey, page.afterKey))
    .orderBy(asc(callerOverrides.callerKey))
    .limit(page.limit);
}

/** An override to write: `expiresAt` and `reason` left out are null. */
export type NewOverride = Omit<OverrideRow, "expiresAt" | "reason"> & { readonly expiresAt?: number | null; readonly reason?: string | null };

/** Create or replace (limits, expiry and reason together), for a batch. */
export function putOverride(db: Db, input: NewOverride) {
  const row = { ...input, expiresAt: input.expiresAt ?? null, reason: input.reason ?? null };
  return db
    .insert(callerOverrides)
    .values(row)
    .onConflictDoUpdate({ target: callerOverrides.callerKey, set: { limits: row.limits, updatedAt: row.updatedAt, expiresAt: row.expiresAt, reason: row.reason } });
}

export function deleteOverride(db: Db, callerKey: string) {
  return db.delete(callerOverrides).where(eq(callerOverrides.callerKey, callerKey));
}

/** Deletes the overrides (`key:<id>`) of every key of a tenant, for a batch that then deletes the keys. */
export function deleteKeyOverridesOfTenant(db: Db, tenant: string) {
  return db
    .delete(callerOverrides)
    .where(inArray(callerOverrides.callerKey, db.select({ callerKey: sql<string>`'key:' || ${apiKeys.id}` }).from(apiKeys).where(eq(apiKeys.tenant, tenant))));
}

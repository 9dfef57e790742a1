// Query helpers for caller_overrides: limits for one caller key (`ip:<address
// or /64>`, `key:<id>`). The gateway reads the whole table at once (see
// src/cache/override-cache.ts); it is small, one row per caller an operator
// singled out.
import { eq, inArray, sql } from "drizzle-orm";
import type { Db } from "./client";
import { apiKeys, callerOverrides } from "./schema";

export interface OverrideRow {
  readonly callerKey: string;
  /** KeyLimits JSON. */
  readonly limits: string;
  readonly updatedAt: number;
}

export function loadAllOverrides(db: Db): Promise<OverrideRow[]> {
  return db.select().from(callerOverrides);
}

export async function getOverride(db: Db, callerKey: string): Promise<OverrideRow | null> {
  const rows = await db.select().from(callerOverrides).where(eq(callerOverrides.callerKey, callerKey)).limit(1);
  return rows[0] ?? null;
}

/** Create or replace, for a batch. */
export function putOverride(db: Db, row: OverrideRow) {
  return db
    .insert(callerOverrides)
    .values(row)
    .onConflictDoUpdate({ target: callerOverrides.callerKey, set: { limits: row.limits, updatedAt: row.updatedAt } });
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

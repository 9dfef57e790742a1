// Query helpers for tenants. Limits and quota are JSON text the admin API has
// validated; timestamps are Unix milliseconds.
import { eq } from "drizzle-orm";
import type { Db } from "./client";
import { tenants } from "./schema";

export interface TenantRow {
  readonly slug: string;
  readonly limits: string;
  readonly quota: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export async function getTenant(db: Db, slug: string): Promise<TenantRow | null> {
  const rows = await db.select().from(tenants).where(eq(tenants.slug, slug)).limit(1);
  return rows[0] ?? null;
}

/** Create or replace, for a batch. A replaced tenant keeps its created_at. */
export function putTenant(db: Db, row: TenantRow) {
  return db
    .insert(tenants)
    .values(row)
    .onConflictDoUpdate({ target: tenants.slug, set: { limits: row.limits, quota: row.quota, updatedAt: row.updatedAt } });
}

/** Sets the given fields of an existing tenant, for a batch. */
export function updateTenant(db: Db, slug: string, fields: { limits?: string; quota?: string; updatedAt: number }) {
  return db.update(tenants).set(fields).where(eq(tenants.slug, slug));
}

export function deleteTenant(db: Db, slug: string) {
  return db.delete(tenants).where(eq(tenants.slug, slug));
}

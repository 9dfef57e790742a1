// Query helpers for tenants. Limits and quota are JSON text the admin API has
// validated; timestamps are Unix milliseconds.
import { asc, eq, gt } from "drizzle-orm";
import type { Db } from "./client";
import { orgs, tenants } from "./schema";

export interface TenantRow {
  readonly slug: string;
  readonly limits: string;
  readonly quota: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** The org's slug, or null. */
  readonly org: string | null;
}

export async function getTenant(db: Db, slug: string): Promise<TenantRow | null> {
  const rows = await db.select().from(tenants).where(eq(tenants.slug, slug)).limit(1);
  return rows[0] ?? null;
}

/** What the gateway needs of a tenant named by a token's claim: its row and its org's quota JSON (null without an org). */
export async function findTenantForGateway(db: Db, slug: string): Promise<(TenantRow & { readonly orgQuota: string | null }) | null> {
  const rows = await db
    .select({
      slug: tenants.slug,
      limits: tenants.limits,
      quota: tenants.quota,
      createdAt: tenants.createdAt,
      updatedAt: tenants.updatedAt,
      org: tenants.org,
      orgQuota: orgs.quota,
      budgets: tenants.budgets,
      orgBudgets: orgs.budgets,
    })
    .from(tenants)
    .leftJoin(orgs, eq(orgs.slug, tenants.org))
    .where(eq(tenants.slug, slug))
    .limit(1);
  return rows[0] ?? null;
}

/** A tenant to write: `org` left out is no org. */
export type NewTenant = Omit<TenantRow, "org"> & { readonly org?: string | null };

/** Create or replace (every field, org included), for a batch. A replaced tenant keeps its created_at. */
export function putTenant(db: Db, input: NewTenant) {
  const row = { ...input, org: input.org ?? null };
  return db
    .insert(tenants)
    .values(row)
    .onConflictDoUpdate({ target: tenants.slug, set: { limits: row.limits, quota: row.quota, org: row.org, updatedAt: row.updatedAt } });
}

/** Sets the given fields of an existing tenant, for a batch. `org: null` removes it from its org. */
export function updateTenant(db: Db, slug: string, fields: { limits?: string; quota?: string; org?: string | null; updatedAt: number }) {
  return db.update(tenants).set(fields).where(eq(tenants.slug, slug));
}

export function deleteTenant(db: Db, slug: string) {
  return db.delete(tenants).where(eq(tenants.slug, slug));
}

/** Tenants in slug order after `afterSlug` (keyset paging), at most `limit`. */
export function listTenants(db: Db, page: { afterSlug?: string | undefined; limit: number }): Promise<TenantRow[]> {
  return db
    .select()
    .from(tenants)
    .where(page.afterSlug === undefined ? undefined : gt(tenants.slug, page.afterSlug))
    .orderBy(asc(tenants.slug))
    .limit(page.limit);
}

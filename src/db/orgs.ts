// Query helpers for orgs and their member tenants. Membership is
// the tenants.org column; the foreign key from it to orgs.slug refuses an org
// deleted while a tenant names it even if two admin calls race.
import { and, asc, count, eq, gt, notExists, type SQL, sql } from "drizzle-orm";
import type { Db } from "./client";
import { orgs, tenants } from "./schema";

export interface OrgRow {
  readonly slug: string;
  /** Quota JSON, as a tenant's. */
  readonly quota: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export async function getOrg(db: Db, slug: string): Promise<OrgRow | null> {
  const rows = await db.select().from(orgs).where(eq(orgs.slug, slug)).limit(1);
  return rows[0] ?? null;
}

/** Create or replace, for a batch. A replaced org keeps its created_at. */
export function putOrg(db: Db, row: OrgRow) {
  return db.insert(orgs).values(row).onConflictDoUpdate({ target: orgs.slug, set: { quota: row.quota, updatedAt: row.updatedAt } });
}

/**
 * Deletes the org only if no tenant names it, in one statement, for a batch:
 * its `changes` is 0 when a tenant joined between the check and the delete.
 */
export function deleteOrgIfEmpty(db: Db, slug: string) {
  return db.delete(orgs).where(and(eq(orgs.slug, slug), notExists(db.select({ one: tenants.slug }).from(tenants).where(eq(tenants.org, slug)))));
}

export interface OrgListingRow extends OrgRow {
  /** Tenants naming the org. */
  readonly tenantCount: number;
}

/** Orgs in slug order after `afterSlug`, with their tenant counts (a correlated count served by tenants_org_idx). */
export function listOrgs(db: Db, page: { afterSlug?: string | undefined; limit: number }): Promise<OrgListingRow[]> {
  return db
    .select({
      slug: orgs.slug,
      quota: orgs.quota,
      createdAt: orgs.createdAt,
      updatedAt: orgs.updatedAt,
      // Spelled out: drizzle writes a single-table query's columns unqualified, and `slug` alone would be the tenant's.
      tenantCount: sql<number>`(select count(*) from "tenants" where "tenants"."org" = "orgs"."slug")`,
    })
    .from(orgs)
    .where(page.afterSlug === undefined ? undefined : gt(orgs.slug, page.afterSlug))
    .orderBy(asc(orgs.slug))
    .limit(page.limit);
}

/** The slugs of the org's tenants, in order, at most `limit`. */
export async function tenantsOfOrg(db: Db, org: string, limit: number): Promise<string[]> {
  const rows = await db.select({ slug: tenants.slug }).from(tenants).where(eq(tenants.org, org)).orderBy(asc(tenants.slug)).limit(limit);
  return rows.map((r) => r.slug);
}

export async function countTenantsOfOrg(db: Db, org: string): Promise<number> {
  const rows = await db.select({ n: count() }).from(tenants).where(eq(tenants.org, org));
  return rows[0]?.n ?? 0;
}

/** The condition "no org has this slug", for an audit event that records a conditional delete. */
export function orgIsGone(slug: string): SQL {
  return sql`not exists (select 1 from ${orgs} where ${orgs.slug} = ${slug})`;
}

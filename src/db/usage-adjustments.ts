// Reconciliation's reads and writes: a tenant's metered total
// of a metric over its whole history (every usage_monthly row of the metric
// plus every adjustment), and the append-only correction. A correction is
// written only if the total is still what the check saw, so two runs at once,
// or a meter flush between the check and the write, never correct twice.
import { asc, eq, gt, type SQL, sql } from "drizzle-orm";
import type { Db } from "./client";
import { tenants, usageAdjustments, usageMonthly } from "./schema";

/** The attribution of a correction made by POST /usage/reconcile?apply=true. */
export const RECONCILIATION = "reconciliation";

/** The metered total of `metric` for `tenant`, as an SQL expression (both sums use the tenant-first indexes). */
function meteredTotal(tenant: SQL | string, metric: string): SQL {
  return sql`(coalesce((select sum(${usageMonthly.value}) from ${usageMonthly} where ${usageMonthly.tenant} = ${tenant} and ${usageMonthly.metric} = ${metric}), 0)
    + coalesce((select sum(${usageAdjustments.value}) from ${usageAdjustments} where ${usageAdjustments.tenant} = ${tenant} and ${usageAdjustments.metric} = ${metric}), 0))`;
}

export interface MeteredTotal {
  readonly tenant: string;
  readonly metered: number;
}

/** Tenants in slug order after `afterSlug` (or just `tenant`), with their metered total of `metric`: one query. */
export function meteredTotals(db: Db, query: { metric: string; afterSlug?: string | undefined; tenant?: string | undefined; limit: number }): Promise<MeteredTotal[]> {
  const where = query.tenant !== undefined ? eq(tenants.slug, query.tenant) : query.afterSlug !== undefined ? gt(tenants.slug, query.afterSlug) : undefined;
  return db
    // Spelled out: drizzle writes a single-table query's columns unqualified.
    .select({ tenant: tenants.slug, metered: meteredTotal(sql`"tenants"."slug"`, query.metric).mapWith(Number) })
    .from(tenants)
    .where(where)
    .orderBy(asc(tenants.slug))
    .limit(query.limit);
}

export interface Adjustment {
  readonly tenant: string;
  /** `YYYY-MM`: the month the correction is made in. */
  readonly period: string;
  readonly metric: string;
  /** Signed amount added to the metric. */
  readonly value: number;
  readonly attribution: string;
  readonly createdAtMs: number;
}

/** The condition "the tenant's metered total of `metric` is still `expected`", for the conditional writes below. */
export function meteredTotalIs(tenant: string, metric: string, expected: number): SQL {
  return sql`${meteredTotal(tenant, metric)} = ${expected}`;
}

/**
 * Appends `adjustment` if the tenant's metered total is still `expected`, for
 * a batch; the statement's `meta.changes` is 1 when it was written, 0 when
 * the total had moved. Its audit event goes before it in the batch, with
 * insertAuditEventWhere and the same meteredTotalIs condition.
 */
export function appendAdjustmentIfUnchanged(db: Db, adjustment: Adjustment, expected: number) {
  const a = adjustment;
  // INSERT … SELECT with a raw select: drizzle lists every column in table order (id first, NULL: the next id).
  return db
    .insert(usageAdjustments)
    .select(sql`select null, ${a.tenant}, ${a.period}, ${a.metric}, ${a.value}, ${a.attribution}, ${a.createdAtMs} where ${meteredTotalIs(a.tenant, a.metric, expected)}`);
}

// The chargeback export's read of usage_monthly: rows in a period range, in
// one total order, a page at a time (keyset pagination, never OFFSET).
import { and, asc, eq, gte, lte, type SQL, sql } from "drizzle-orm";
import type { Db } from "./client";
import { usageMonthly } from "./schema";

export interface UsageExportRow {
  readonly tenant: string;
  /** `YYYY-MM`, UTC. */
  readonly period: string;
  readonly metric: string;
  readonly value: number;
}

/** Where the previous page ended: the last row's sort key. */
export interface UsageExportCursor {
  readonly period: string;
  readonly tenant: string;
  readonly metric: string;
}

export interface UsageExportPageQuery {
  /** First period, inclusive, `YYYY-MM`. */
  readonly from: string;
  /** Last period, inclusive, `YYYY-MM`. */
  readonly to: string;
  readonly tenant?: string | undefined;
  /** Only rows after this key; undefined for the first page. */
  readonly after?: UsageExportCursor | undefined;
  readonly limit: number;
}

/**
 * One page of rows with `from <= period <= to`, ordered by period, tenant,
 * metric. Those three columns are the primary key, so the order is total (no
 * ties) and the same rows always come back in the same order; BINARY
 * collation compares bytes, so it does not depend on locale. The order is
 * exactly usage_monthly_period_idx, which serves the range and the cursor.
 */
export function usageExportPage(db: Db, query: UsageExportPageQuery): Promise<UsageExportRow[]> {
  const conditions: SQL[] = [gte(usageMonthly.period, query.from), lte(usageMonthly.period, query.to)];
  if (query.tenant !== undefined) conditions.push(eq(usageMonthly.tenant, query.tenant));
  if (query.after !== undefined) {
    const { period, tenant, metric } = query.after;
    // A row-value comparison is the same order as the ORDER BY below.
    conditions.push(sql`(${usageMonthly.period}, ${usageMonthly.tenant}, ${usageMonthly.metric}) > (${period}, ${tenant}, ${metric})`);
  }
  return db
    .select({ tenant: usageMonthly.tenant, period: usageMonthly.period, metric: usageMonthly.metric, value: usageMonthly.value })
    .from(usageMonthly)
    .where(and(...conditions))
    .orderBy(asc(usageMonthly.period), asc(usageMonthly.tenant), asc(usageMonthly.metric))
    .limit(query.limit);
}

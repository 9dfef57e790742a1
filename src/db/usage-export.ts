// The chargeback export's read: usage_monthly rows in a period range plus the
// usage_adjustments of the same (tenant, period, metric), summed into one
// figure per key, in one total order, a page at a time (keyset pagination,
// never OFFSET).
import { type SQL, sql } from "drizzle-orm";
import type { Db } from "./client";
import { usageAdjustments, usageMonthly } from "./schema";

export interface UsageExportRow {
  readonly tenant: string;
  /** `YYYY-MM`, UTC. */
  readonly period: string;
  readonly metric: string;
  /** The metered value plus every adjustment of the key. */
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
  /** Rows read from D1 for this page (at least 3); the page may hold one fewer. */
  readonly limit: number;
}

export interface UsageExportPage {
  readonly rows: UsageExportRow[];
  /** The cursor for the next page, or null when this was the last. */
  readonly next: UsageExportCursor | null;
}

type Table = typeof usageMonthly | typeof usageAdjustments;

function conditions(table: Table, query: UsageExportPageQuery): SQL {
  const parts: SQL[] = [sql`${table.period} >= ${query.from}`, sql`${table.period} <= ${query.to}`];
  if (query.tenant !== undefined) parts.push(sql`${table.tenant} = ${query.tenant}`);
  if (query.after !== undefined) {
    const { period, tenant, metric } = query.after;
    // A row-value comparison is the same order as the ORDER BY below.
    parts.push(sql`(${table.period}, ${table.tenant}, ${table.metric}) > (${period}, ${tenant}, ${metric})`);
  }
  return sql.join(parts, sql` and `);
}

function sameKey(a: UsageExportCursor, b: UsageExportCursor): boolean {
  return a.period === b.period && a.tenant === b.tenant && a.metric === b.metric;
}

/**
 * One page of figures with `from <= period <= to`, ordered by period, tenant,
 * metric (BINARY collation: bytes, not locale). One query: the metered rows
 * (unique per key: the primary key) and the adjustments grouped per key, as
 * one ordered UNION ALL, so a key has at most two rows there, which are
 * summed here. A full page holds back its last key, which may continue on
 * the next page; the cursor is the key before it.
 */
export async function usageExportPage(db: Db, query: UsageExportPageQuery): Promise<UsageExportPage> {
  const m = usageMonthly;
  const a = usageAdjustments;
  const raw = await db.all<{ period: string; tenant: string; metric: string; value: number }>(sql`
    select ${m.period} as period, ${m.tenant} as tenant, ${m.metric} as metric, ${m.value} as value from ${m} where ${conditions(m, query)}
    union all
    select ${a.period}, ${a.tenant}, ${a.metric}, sum(${a.value}) from ${a} where ${conditions(a, query)} group by ${a.period}, ${a.tenant}, ${a.metric}
    order by 1, 2, 3
    limit ${query.limit}`);
  const rows: UsageExportRow[] = [];
  for (const r of raw) {
    const last = rows[rows.length - 1];
    if (last !== undefined && sameKey(last, r)) rows[rows.length - 1] = { ...last, value: last.value + r.value };
    else rows.push({ tenant: r.tenant, period: r.period, metric: r.metric, value: r.value });
  }
  if (raw.length < query.limit) return { rows, next: null };
  rows.pop();
  const last = rows[rows.length - 1];
  if (last === undefined) throw new Error("export page limit below 3");
  return { rows, next: { period: last.period, tenant: last.tenant, metric: last.metric } };
}


// Query helpers for usage_monthly: one counter per tenant, UTC month and metric.
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "./client";
import { usageMonthly } from "./schema";

/** The UTC calendar month of `atMs` as `YYYY-MM`. */
export function periodOf(atMs: number): string {
  return new Date(atMs).toISOString().slice(0, 7);
}

/** Adds `amount` to a tenant's metric for `period`, creating the row, for a batch. */
export function addMonthlyUsage(db: Db, tenant: string, period: string, metric: string, amount: number) {
  return db
    .insert(usageMonthly)
    .values({ tenant, period, metric, value: amount })
    .onConflictDoUpdate({ target: [usageMonthly.tenant, usageMonthly.period, usageMonthly.metric], set: { value: sql`${usageMonthly.value} + ${amount}` } });
}

/** The metric's value for the period, 0 when nothing was recorded. */
export async function monthlyUsage(db: Db, tenant: string, period: string, metric: string): Promise<number> {
  const rows = await db
    .select({ value: usageMonthly.value })
    .from(usageMonthly)
    .where(and(eq(usageMonthly.tenant, tenant), eq(usageMonthly.period, period), eq(usageMonthly.metric, metric)))
    .limit(1);
  return rows[0]?.value ?? 0;
}

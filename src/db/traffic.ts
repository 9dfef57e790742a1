// Traffic rollups in D1: what the isolates' flushes add (traffic_minutely,
// traffic_refused) and what GET /traffic and GET /traffic/top-refused read.
import { and, desc, gte, lt, sql } from "drizzle-orm";
import type { Db } from "./client";
import { trafficMinutely, trafficRefused } from "./schema";

/** D1 binds at most 100 parameters per statement: 4 per minutely row, 5 per refused row. */
const MINUTELY_ROWS_PER_STATEMENT = 25;
const REFUSED_ROWS_PER_STATEMENT = 20;

export interface TrafficRow {
  readonly minuteMs: number;
  readonly tenant: string;
  readonly decision: string;
  readonly count: number;
}

export interface RefusedRow {
  readonly minuteMs: number;
  readonly caller: string;
  readonly tenant: string | null;
  readonly count: number;
  readonly error: number;
}

/**
 * Adds one flush's counts (upserts that add, so isolates flushing the same
 * minute never overwrite each other) and prunes rows older than
 * `pruneBeforeMs`, in one batch: it lands whole or not at all, so a failed
 * flush may be put back and written again without counting twice.
 */
export async function addTraffic(db: Db, rows: readonly TrafficRow[], refused: readonly RefusedRow[], pruneBeforeMs: number | null): Promise<void> {
  const statements = [];
  for (let i = 0; i < rows.length; i += MINUTELY_ROWS_PER_STATEMENT) {
    statements.push(
      db
        .insert(trafficMinutely)
        .values(rows.slice(i, i + MINUTELY_ROWS_PER_STATEMENT).map((r) => ({ ...r })))
        .onConflictDoUpdate({ target: [trafficMinutely.minuteMs, trafficMinutely.tenant, trafficMinutely.decision], set: { count: sql`${trafficMinutely.count} + excluded.count` } }),
    );
  }
  for (let i = 0; i < refused.length; i += REFUSED_ROWS_PER_STATEMENT) {
    statements.push(
      db
        .insert(trafficRefused)
        .values(refused.slice(i, i + REFUSED_ROWS_PER_STATEMENT).map((r) => ({ ...r })))
        .onConflictDoUpdate({
          target: [trafficRefused.minuteMs, trafficRefused.caller],
          set: { count: sql`${trafficRefused.count} + excluded.count`, error: sql`${trafficRefused.error} + excluded.error`, tenant: sql`coalesce(excluded.tenant, ${trafficRefused.tenant})` },
        }),
    );
  }
  if (pruneBeforeMs !== null) {
    statements.push(db.delete(trafficMinutely).where(lt(trafficMinutely.minuteMs, pruneBeforeMs)));
    statements.push(db.delete(trafficRefused).where(lt(trafficRefused.minuteMs, pruneBeforeMs)));
  }
  const [first, ...rest] = statements;
  if (first !== undefined) await db.batch([first, ...rest]);
}

/** Counts per minute and decision in [fromMs, toMs), for one tenant or all (summed over tenants). */
export async function trafficSeries(db: Db, fromMs: number, toMs: number, tenant: string | null): Promise<{ minuteMs: number; decision: string; count: number }[]> {
  const range = and(gte(trafficMinutely.minuteMs, fromMs), lt(trafficMinutely.minuteMs, toMs));
  const where = tenant === null ? range : and(range, sql`${trafficMinutely.tenant} = ${tenant}`);
  return db
    .select({ minuteMs: trafficMinutely.minuteMs, decision: trafficMinutely.decision, count: sql<number>`sum(${trafficMinutely.count})`.mapWith(Number) })
    .from(trafficMinutely)
    .where(where)
    .groupBy(trafficMinutely.minuteMs, trafficMinutely.decision)
    .orderBy(trafficMinutely.minuteMs, trafficMinutely.decision);
}

/** The callers refused most since `sinceMs`, summed over minutes and isolates, largest first. */
export async function topRefused(db: Db, sinceMs: number, limit: number): Promise<{ caller: string; tenant: string | null; count: number; error: number }[]> {
  const count = sql<number>`sum(${trafficRefused.count})`.mapWith(Number);
  return db
    .select({ caller: trafficRefused.caller, tenant: sql<string | null>`max(${trafficRefused.tenant})`, count, error: sql<number>`sum(${trafficRefused.error})`.mapWith(Number) })
    .from(trafficRefused)
    .where(gte(trafficRefused.minuteMs, sinceMs))
    .groupBy(trafficRefused.caller)
    .orderBy(desc(count), trafficRefused.caller)
    .limit(limit);
}

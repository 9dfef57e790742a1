// Traffic rollups in D1: what the isolates' flushes add (traffic_minutely,
// traffic_refused) and what GET /traffic and GET /traffic/top-refused read.
import { and, desc, gte, lt, sql } from "drizzle-orm";
import type { Db } from "./client";
import { trafficMinutely, trafficRefused, trafficShadow, trafficShadowCallers } from "./schema";

/** D1 binds at most 100 parameters per statement: 4 per minutely row, 5 per refused row. */
const MINUTELY_ROWS_PER_STATEMENT = 25;
const REFUSED_ROWS_PER_STATEMENT = 20;
/** 5 per shadow row, 6 per shadow caller row. */
const SHADOW_ROWS_PER_STATEMENT = 20;
const SHADOW_CALLER_ROWS_PER_STATEMENT = 16;

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

/** What a shadow policy would have refused in one minute, for one tenant and code. */
export interface ShadowRow {
  readonly minuteMs: number;
  readonly policy: string;
  readonly tenant: string;
  readonly decision: string;
  readonly count: number;
}

/** One caller a shadow policy would have refused in one minute (an explain-able id; an address as its digest). */
export interface ShadowCallerRow {
  readonly minuteMs: number;
  readonly policy: string;
  readonly caller: string;
  readonly tenant: string | null;
  readonly count: number;
  readonly error: number;
}

/** A flush's shadow rows (none when no shadow policy would have refused anything). */
export interface ShadowFlush {
  readonly rows: readonly ShadowRow[];
  readonly callers: readonly ShadowCallerRow[];
}

const NO_SHADOW: ShadowFlush = { rows: [], callers: [] };

/**
 * Adds one flush's counts (upserts that add, so isolates flushing the same
 * minute never overwrite each other) and prunes rows older than
 * `pruneBeforeMs`, in one batch: it lands whole or not at all, so a failed
 * flush may be put back and written again without counting twice.
 */
export async function addTraffic(db: Db, rows: readonly TrafficRow[], refused: readonly RefusedRow[], pruneBeforeMs: number | null, shadow: ShadowFlush = NO_SHADOW): Promise<void> {
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
  for (let i = 0; i < shadow.rows.length; i += SHADOW_ROWS_PER_STATEMENT) {
    statements.push(
      db
        .insert(trafficShadow)
        .values(shadow.rows.slice(i, i + SHADOW_ROWS_PER_STATEMENT).map((r) => ({ ...r })))
        .onConflictDoUpdate({ target: [trafficShadow.minuteMs, trafficShadow.policy, trafficShadow.tenant, trafficShadow.decision], set: { count: sql`${trafficShadow.count} + excluded.count` } }),
    );
  }
  for (let i = 0; i < shadow.callers.length; i += SHADOW_CALLER_ROWS_PER_STATEMENT) {
    statements.push(
      db
        .insert(trafficShadowCallers)
        .values(shadow.callers.slice(i, i + SHADOW_CALLER_ROWS_PER_STATEMENT).map((r) => ({ ...r })))
        .onConflictDoUpdate({
          target: [trafficShadowCallers.minuteMs, trafficShadowCallers.policy, trafficShadowCallers.caller],
          set: { count: sql`${trafficShadowCallers.count} + excluded.count`, error: sql`${trafficShadowCallers.error} + excluded.error`, tenant: sql`coalesce(excluded.tenant, ${trafficShadowCallers.tenant})` },
        }),
    );
  }
  if (pruneBeforeMs !== null) {
    statements.push(db.delete(trafficMinutely).where(lt(trafficMinutely.minuteMs, pruneBeforeMs)));
    statements.push(db.delete(trafficRefused).where(lt(trafficRefused.minuteMs, pruneBeforeMs)));
    statements.push(db.delete(trafficShadow).where(lt(trafficShadow.minuteMs, pruneBeforeMs)));
    statements.push(db.delete(trafficShadowCallers).where(lt(trafficShadowCallers.minuteMs, pruneBeforeMs)));
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

/** Per shadow policy since `sinceMs`: what it would have refused, by tenant and code, summed over minutes and isolates. */
export async function shadowTotals(db: Db, sinceMs: number): Promise<{ policy: string; tenant: string; decision: string; count: number }[]> {
  const count = sql<number>`sum(${trafficShadow.count})`.mapWith(Number);
  return db
    .select({ policy: trafficShadow.policy, tenant: trafficShadow.tenant, decision: trafficShadow.decision, count })
    .from(trafficShadow)
    .where(gte(trafficShadow.minuteMs, sinceMs))
    .groupBy(trafficShadow.policy, trafficShadow.tenant, trafficShadow.decision)
    .orderBy(trafficShadow.policy, trafficShadow.tenant, trafficShadow.decision);
}

/** The callers each shadow policy would have refused most since `sinceMs`, largest first within each policy (at most `perPolicy` each). */
export async function shadowTopCallers(db: Db, sinceMs: number, perPolicy: number): Promise<{ policy: string; caller: string; tenant: string | null; count: number; error: number }[]> {
  const count = sql<number>`sum(${trafficShadowCallers.count})`.mapWith(Number);
  const rows = await db
    .select({ policy: trafficShadowCallers.policy, caller: trafficShadowCallers.caller, tenant: sql<string | null>`max(${trafficShadowCallers.tenant})`, count, error: sql<number>`sum(${trafficShadowCallers.error})`.mapWith(Number) })
    .from(trafficShadowCallers)
    .where(gte(trafficShadowCallers.minuteMs, sinceMs))
    .groupBy(trafficShadowCallers.policy, trafficShadowCallers.caller)
    .orderBy(trafficShadowCallers.policy, desc(count), trafficShadowCallers.caller);
  const kept = new Map<string, number>();
  return rows.filter((row) => {
    const n = kept.get(row.policy) ?? 0;
    kept.set(row.policy, n + 1);
    return n < perPolicy;
  });
}

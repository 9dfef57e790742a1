// Alert deliveries in D1 (GET /alerts): one row per alert id with its state,
// and one per attempt. The queue handler writes them; a redelivered message
// finds its row and does not send an alert that is already settled twice.
import { desc, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "./client";
import { alertAttempts, alerts } from "./schema";

export type AlertState = "pending" | "delivered" | "failed" | "expired";

export interface AlertRow {
  readonly id: string;
  readonly type: string;
  readonly atMs: number;
  readonly tenant: string | null;
  readonly state: string;
  readonly attempts: number;
  readonly lastStatus: number | null;
  readonly body: string;
  readonly updatedAt: number;
}

/** The alert's row, created pending the first time its id is seen. */
export async function alertRow(db: Db, alert: { id: string; type: string; atMs: number; tenant: string | null; body: string }, nowMs: number): Promise<AlertRow> {
  const [, rows] = await db.batch([
    db.insert(alerts).values({ ...alert, state: "pending", attempts: 0, updatedAt: nowMs }).onConflictDoNothing(),
    db.select().from(alerts).where(eq(alerts.id, alert.id)).limit(1),
  ]);
  return rows[0]!;
}

/** Records one attempt and the alert's state after it, in one batch. */
export async function recordAttempt(db: Db, id: string, attempt: number, atMs: number, outcome: string, status: number | null, state: AlertState): Promise<void> {
  await db.batch([
    db.insert(alertAttempts).values({ alertId: id, attempt, atMs, outcome, status }).onConflictDoNothing(),
    db.update(alerts).set({ state, attempts: sql`max(${alerts.attempts}, ${attempt})`, lastStatus: status, updatedAt: atMs }).where(eq(alerts.id, id)),
  ]);
}

/** The newest alerts, each with its attempts (oldest first). */
export async function recentAlerts(db: Db, limit: number): Promise<(AlertRow & { attemptList: { attempt: number; atMs: number; outcome: string; status: number | null }[] })[]> {
  const rows = await db.select().from(alerts).orderBy(desc(alerts.atMs), desc(alerts.id)).limit(limit);
  if (rows.length === 0) return [];
  const attempts = await db.select().from(alertAttempts).where(inArray(alertAttempts.alertId, rows.map((r) => r.id))).orderBy(alertAttempts.alertId, alertAttempts.attempt);
  return rows.map((row) => ({ ...row, attemptList: attempts.filter((a) => a.alertId === row.id).map(({ attempt, atMs, outcome, status }) => ({ attempt, atMs, outcome, status })) }));
}

// What TenantQuota and OrgQuota keep alike: the `audit_windows` and `meta`
// tables (each object's migration 1 creates them, with the same columns),
// and the one-alarm-at-the-earliest rule. One copy, so the two objects cannot
// drift apart on when an audit event may go out.
import type { AuditDue, QuotaKind } from "./quota-types";

const AUDIT_WINDOW = `SELECT last_at FROM audit_windows WHERE event = ? AND quota_kind = ?`;
const SET_AUDIT_WINDOW = `INSERT INTO audit_windows (event, quota_kind, last_at) VALUES (?, ?, ?)
                          ON CONFLICT (event, quota_kind) DO UPDATE SET last_at = excluded.last_at`;
const META = `SELECT value FROM meta WHERE key = ?`;
const SET_META = `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;

/**
 * Whether an audit event of this kind may go out at `nowMs` (none in the
 * window before it), recording that one does. Run inside the caller's
 * `transactionSync`.
 */
export function takeAuditWindow(sql: SqlStorage, event: AuditDue["kind"], quotaKind: QuotaKind, nowMs: number, windowMs: number): boolean {
  const last = sql.exec<{ last_at: number }>(AUDIT_WINDOW, event, quotaKind).toArray()[0]?.last_at;
  // Isolates' clocks differ a little: a `nowMs` just behind `last` is inside the window too.
  if (last !== undefined && nowMs < last + windowMs) return false;
  sql.exec(SET_AUDIT_WINDOW, event, quotaKind, nowMs);
  return true;
}

export function readMeta(sql: SqlStorage, key: string): string | null {
  return sql.exec<{ value: string }>(META, key).toArray()[0]?.value ?? null;
}

export function writeMeta(sql: SqlStorage, key: string, value: string): void {
  sql.exec(SET_META, key, value);
}

/** Sets the object's alarm to `atMs` unless one is already due sooner. */
export async function ensureAlarmBy(storage: DurableObjectStorage, atMs: number): Promise<void> {
  const current = await storage.getAlarm();
  if (current === null || current > atMs) await storage.setAlarm(atMs);
}

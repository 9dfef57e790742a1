// The audit events TenantQuota writes to D1 itself, after the change they
// record is durable: `reservation_expired` (the alarm) and
// `reservation_late_commit` (a commit after its reservation expired). Best
// effort: a D1 failure is logged (counts only) and the events dropped, never
// retried and never failing the call, since the change itself stands.
import { INSERT_AUDIT } from "./tenant-quota-sql";

/** Audit rows per D1 batch. */
const AUDIT_ROWS_PER_BATCH = 50;

/** One audit event: subject is the object; detail holds no secret. */
export interface OwnAudit {
  kind: "reservation_expired" | "reservation_late_commit";
  object: string;
  detail: Record<string, unknown>;
}

export async function writeOwnAudits(db: D1Database, tenant: string | null, audits: readonly OwnAudit[], nowMs: number): Promise<void> {
  try {
    for (let start = 0; start < audits.length; start += AUDIT_ROWS_PER_BATCH) {
      const rows = audits.slice(start, start + AUDIT_ROWS_PER_BATCH);
      await db.batch(rows.map((a) => db.prepare(INSERT_AUDIT).bind(nowMs, a.kind, tenant, a.object, JSON.stringify(a.detail))));
    }
  } catch (err) {
    console.error(
      JSON.stringify({
        level: "error",
        at_unix_ms: Date.now(),
        event: "quota_audit_write_failed",
        tenant,
        kinds: [...new Set(audits.map((a) => a.kind))],
        expired: audits.filter((a) => a.kind === "reservation_expired").length,
        error: err instanceof Error ? err.name : typeof err,
      }),
    );
  }
}

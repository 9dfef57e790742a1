// The audit subject of admin writes (overrides and blocks) and of the audit
// log's `caller` filter. A write creates the deployment secret if no key was
// ever minted (the first writer wins, as for a mint), so an override written
// before any key still gets a keyed digest; a read never creates it.
import type { Db } from "../db/client";
import { auditSubject, isReadableSubject } from "../identity/audit-subject";
import type { Runtime } from "../runtime";
import { stored } from "./storage";

/** The audit `subject` of a canonical caller key or block target (see auditSubject), for a write. */
export async function adminAuditSubject(runtime: Runtime, db: Db, callerKey: string, nowMs: number): Promise<string> {
  if (isReadableSubject(callerKey)) return callerKey;
  const key = await stored(() => runtime.keyCheck.auditKey(db, nowMs, true));
  return auditSubject(key!, callerKey);
}

/** The same subject for a read; null when the deployment has no secret yet (so no digested subject exists). */
export async function readAuditSubject(runtime: Runtime, db: Db, callerKey: string, nowMs: number): Promise<string | null> {
  if (isReadableSubject(callerKey)) return callerKey;
  const key = await stored(() => runtime.keyCheck.auditKey(db, nowMs, false));
  return key === null ? null : auditSubject(key, callerKey);
}

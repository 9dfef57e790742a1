// The audit-subject key for admin writes (overrides and blocks) and for the
// audit log's `caller` filter. A write creates the deployment secret if no
// key was ever minted (the first writer wins, as for a mint), so an override
// written before any key still gets a keyed digest; a read never creates it.
// The derived key is kept per key-check key (one per isolate).
import type { Config } from "../config";
import { keyCheckForMint, loadKeyCheck } from "../cache/key-check";
import type { Db } from "../db/client";
import { auditSubject, deriveAuditSubjectKey, isReadableSubject } from "../identity/audit-subject";
import { stored } from "./storage";

const derived = new WeakMap<CryptoKey, Promise<CryptoKey>>();

function subjectKeyFor(checkKey: CryptoKey): Promise<CryptoKey> {
  let key = derived.get(checkKey);
  if (key === undefined) {
    key = deriveAuditSubjectKey(checkKey);
    derived.set(checkKey, key);
  }
  return key;
}

/** The audit `subject` of a canonical caller key or block target (see auditSubject), for a write. */
export async function adminAuditSubject(db: Db, callerKey: string, nowMs: number): Promise<string> {
  if (isReadableSubject(callerKey)) return callerKey;
  const checkKey = await stored(() => keyCheckForMint(db, nowMs));
  return auditSubject(await subjectKeyFor(checkKey), callerKey);
}

/** The same subject for a read; null when the deployment has no secret yet (so no digested subject exists). */
export async function readAuditSubject(db: Db, config: Config, callerKey: string, nowMs: number): Promise<string | null> {
  if (isReadableSubject(callerKey)) return callerKey;
  const checkKey = await stored(() => loadKeyCheck(() => db, config, nowMs));
  return checkKey === null ? null : auditSubject(await subjectKeyFor(checkKey), callerKey);
}

// How a caller appears in the audit log:
// addresses, networks and JWT subjects only as keyed digests, so the log
// never holds a client's address and the digests cannot be reversed by
// trying every address (2^32 for IPv4) without the deployment's secret. Key
// ids and tenant slugs stay readable: the admin API shows them anyway.
//
// The HMAC key is derived from the deployment's key-check key (the HMAC key
// of the `key_check_secret` setting, src/identity/api-key.ts) by signing a
// label, so the two uses of the one secret never share inputs: a key check
// is an HMAC of a `tg_…` key body, an audit subject an HMAC under another key.

import { hmacBytes, toHex } from "../utils/crypto";

const SUBJECT_KEY_LABEL = "tollgate audit-subject key v1";

/** Prefix of a digested subject: `hmac:` and 64 lower-case hex characters. */
export const DIGESTED_SUBJECT_PREFIX = "hmac:";

/**
 * The audit-subject key for a deployment, from its key-check HMAC key
 * (KeyCheckLoader in src/cache/key-check.ts). Derive it
 * once per isolate: one HMAC and one key import.
 */
export async function deriveAuditSubjectKey(keyCheckKey: CryptoKey): Promise<CryptoKey> {
  const raw = await hmacBytes(keyCheckKey, SUBJECT_KEY_LABEL);
  return crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

/** Caller keys whose text is public in the admin API, written as they are. */
export function isReadableSubject(callerKey: string): boolean {
  return callerKey.startsWith("key:") || callerKey.startsWith("tenant:") || callerKey === "anonymous";
}

/**
 * The audit `subject` for a caller key or block target: `key:<id>`,
 * `tenant:<slug>` and `anonymous` unchanged; anything else (`ip:`, `net:`, `jwt:`) as
 * `hmac:<hex HMAC-SHA256(key, callerKey)>`. Pass the canonical spelling
 * (`ip:2001:db8:1:2::/64`, not a full IPv6 address), so one caller always
 * gets one subject.
 */
export async function auditSubject(key: CryptoKey, callerKey: string): Promise<string> {
  if (isReadableSubject(callerKey)) return callerKey;
  return DIGESTED_SUBJECT_PREFIX + toHex(await hmacBytes(key, callerKey));
}

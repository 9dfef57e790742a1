// How a caller appears in the audit log (issue 10 item 13). Key ids and
// tenant slugs are public in the admin API and stay readable. Addresses,
// networks and JWT subjects are personal data and guessable (there are only
// 2^32 IPv4 addresses), so they are written as an HMAC under the
// deployment's secret: the same caller always gets the same digest, and
// nobody without the secret can find which caller it is.
import { hmacBytes, toHex } from "../utils/crypto";

/** Hex characters of the HMAC kept: 128 bits. */
const DIGEST_CHARS = 32;

/** `key:<id>` and `tenant:<slug>` as they are; anything else as `hmac:<hex>`. */
export async function auditSubject(key: CryptoKey, callerKey: string): Promise<string> {
  if (callerKey.startsWith("key:") || callerKey.startsWith("tenant:")) return callerKey;
  // Domain-separated from the key-check tags made with the same secret.
  return `hmac:${toHex(await hmacBytes(key, `audit-subject\n${callerKey}`)).slice(0, DIGEST_CHARS)}`;
}

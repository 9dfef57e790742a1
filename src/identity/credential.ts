// The one credential check (issue 11): what a presented credential is worth,
// as a tagged outcome the gateway maps to a response in one switch. Managed
// keys (`tg_<id>_<secret>`) are verified here; JWTs join it when JWT callers
// land. The hot path — a key seen recently whose record is fresh — hashes
// nothing, queries nothing and allocates no promise: the outcome comes back
// synchronously.
import type { KeyCache, KeyRecord } from "../cache/key-cache";
import type { KeyCheckLoader } from "../cache/key-check";
import type { Db } from "../db/client";
import { sha256Hex } from "../utils/crypto";
import { hasValidCheck, parseApiKey } from "./api-key";

export type RefusedCredential = "invalid_credential" | "credential_revoked" | "credential_expired";

export type CredentialOutcome =
  | { readonly kind: "key"; readonly record: KeyRecord }
  | { readonly kind: "refused"; readonly code: RefusedCredential; readonly detail: string }
  /** The credential could not be checked (D1 down with nothing cached): 503 auth_unavailable. */
  | { readonly kind: "unavailable" };

export interface CredentialVerifier {
  readonly keys: KeyCache;
  readonly keyCheck: KeyCheckLoader;
}

export interface CredentialIo {
  readonly db: () => Db;
  /** Receives loads this check starts, so they finish if the request is cancelled. */
  readonly keepAlive?: (work: Promise<unknown>) => void;
}

const NOT_A_KEY: CredentialOutcome = Object.freeze({ kind: "refused", code: "invalid_credential", detail: "The credential is not an API key issued by this gateway." });
const INVALID_KEY: CredentialOutcome = Object.freeze({ kind: "refused", code: "invalid_credential", detail: "The API key is not valid." });
const REVOKED: CredentialOutcome = Object.freeze({ kind: "refused", code: "credential_revoked", detail: "The API key was revoked." });
const EXPIRED: CredentialOutcome = Object.freeze({ kind: "refused", code: "credential_expired", detail: "The API key has expired." });
const UNAVAILABLE: CredentialOutcome = Object.freeze({ kind: "unavailable" });

function judge(record: KeyRecord | null, nowMs: number): CredentialOutcome {
  if (record === null) return INVALID_KEY;
  if (record.revokedAtMs !== null && record.revokedAtMs <= nowMs) return REVOKED;
  if (record.expiresAtMs !== null && record.expiresAtMs <= nowMs) return EXPIRED;
  return { kind: "key", record };
}

/**
 * Verifies a presented credential (never null or absent: the caller handles
 * anonymous requests). Synchronous when the key was seen recently and its
 * record is fresh; otherwise a promise. Never throws.
 */
export function verifyCredential(credential: string, verifier: CredentialVerifier, io: CredentialIo, nowMs: number): CredentialOutcome | Promise<CredentialOutcome> {
  const remembered = verifier.keys.rememberedDigest(credential);
  if (remembered !== undefined) {
    const cached = verifier.keys.peek(remembered, nowMs);
    if (cached !== undefined) return judge(cached, nowMs);
  }
  if (parseApiKey(credential) === null) return NOT_A_KEY;
  return verifySlowly(credential, remembered, verifier, io, nowMs);
}

async function verifySlowly(credential: string, remembered: string | undefined, verifier: CredentialVerifier, io: CredentialIo, nowMs: number): Promise<CredentialOutcome> {
  if (remembered === undefined) {
    // A key not seen recently must carry a valid check before it costs a
    // lookup: made-up keys stop here, with no D1 query.
    let checkKey = verifier.keyCheck.peek(nowMs);
    if (checkKey === undefined) {
      try {
        checkKey = await verifier.keyCheck.load(io.db, nowMs, io.keepAlive);
      } catch {
        return UNAVAILABLE;
      }
    }
    if (checkKey === null || !(await hasValidCheck(credential, checkKey))) return INVALID_KEY;
  }
  const digest = remembered ?? (await sha256Hex(credential));
  let record = verifier.keys.peek(digest, nowMs);
  if (record === undefined) {
    try {
      record = await verifier.keys.lookup(io.db, digest, nowMs, io.keepAlive);
    } catch {
      return UNAVAILABLE;
    }
  }
  if (record !== null && remembered === undefined) verifier.keys.rememberDigest(credential, digest);
  return judge(record, nowMs);
}

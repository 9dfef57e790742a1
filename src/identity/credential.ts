// The one credential check (issue 11): what a presented credential is worth,
// as a tagged outcome the gateway maps to a response in one switch. Managed
// keys (`tg_<id>_<secret>`) and, when the config names issuers, JWTs are
// verified here. The hot path — a key or token seen recently whose
// record is fresh — hashes nothing, queries nothing, checks no signature and
// allocates no promise: the outcome comes back synchronously.
import type { KeyCache, KeyRecord } from "../cache/key-cache";
import type { KeyCheckLoader } from "../cache/key-check";
import type { TenantCache } from "../cache/tenant-cache";
import type { TenantInfo } from "../exchange";
import type { Db } from "../db/client";
import { sha256Hex } from "../utils/crypto";
import { hasValidCheck, KEY_PREFIX, parseApiKey } from "./api-key";
import { looksLikeJwt } from "./jwt-token";
import type { JwtOutcome, JwtVerifier } from "./jwt-verifier";

export type RefusedCredential = "invalid_credential" | "credential_revoked" | "credential_expired";

export type CredentialOutcome =
  | { readonly kind: "key"; readonly record: KeyRecord }
  | { readonly kind: "jwt"; readonly callerKey: string; readonly tenant: TenantInfo | null }
  | { readonly kind: "refused"; readonly code: RefusedCredential; readonly detail: string }
  /** A valid token whose tenant claim names no tenant: 403 tenant_unknown (the credential itself is good). */
  | { readonly kind: "tenant_unknown" }
  /** The credential could not be checked (D1 down with nothing cached, or no key set for a JWT): 503 auth_unavailable. */
  | { readonly kind: "unavailable" };

export interface CredentialVerifier {
  readonly keys: KeyCache;
  readonly keyCheck: KeyCheckLoader;
  /** Null when the config names no JWT issuer: every non-key credential is invalid. */
  readonly jwt: JwtVerifier | null;
  readonly tenants: TenantCache;
}

export interface CredentialIo {
  readonly db: () => Db;
  /** Receives loads this check starts, so they finish if the request is cancelled. */
  readonly keepAlive?: (work: Promise<unknown>) => void;
}

/**
 * A managed key not seen lately whose check is due before its lookup and can
 * be made from memory (the check key is cached): `valid` says whether the
 * key's check characters match. It waits on no I/O (an HMAC; see hmacBytes),
 * so it settles in the turn it was asked in. The caller verifies again with
 * the verdict: false is refused at once, true goes on to the lookup.
 */
export interface PendingKeyCheck {
  readonly kind: "check";
  readonly valid: Promise<boolean>;
}

const NOT_A_KEY: CredentialOutcome = Object.freeze({ kind: "refused", code: "invalid_credential", detail: "The credential is not an API key issued by this gateway." });
const INVALID_KEY: CredentialOutcome = Object.freeze({ kind: "refused", code: "invalid_credential", detail: "The API key is not valid." });
const REVOKED: CredentialOutcome = Object.freeze({ kind: "refused", code: "credential_revoked", detail: "The API key was revoked." });
const EXPIRED: CredentialOutcome = Object.freeze({ kind: "refused", code: "credential_expired", detail: "The API key has expired." });
const UNAVAILABLE: CredentialOutcome = Object.freeze({ kind: "unavailable" });
const TENANT_UNKNOWN: CredentialOutcome = Object.freeze({ kind: "tenant_unknown" });
const INVALID_TOKEN: CredentialOutcome = Object.freeze({ kind: "refused", code: "invalid_credential", detail: "The token is not valid." });
const EXPIRED_TOKEN: CredentialOutcome = Object.freeze({ kind: "refused", code: "credential_expired", detail: "The token has expired." });

function judge(record: KeyRecord | null, nowMs: number): CredentialOutcome {
  if (record === null) return INVALID_KEY;
  if (record.revokedAtMs !== null && record.revokedAtMs <= nowMs) return REVOKED;
  if (record.expiresAtMs !== null && record.expiresAtMs <= nowMs) return EXPIRED;
  return { kind: "key", record };
}

/**
 * Verifies a presented credential (never null or absent: the caller handles
 * anonymous requests). Synchronous when the key was seen recently and its
 * record is fresh; a PendingKeyCheck for a key not seen lately whose check
 * can be made from memory (verify again with its verdict as `checked`);
 * otherwise a promise. `checked`: that verdict, undefined before the check.
 * Never throws.
 */
export function verifyCredential(
  credential: string,
  verifier: CredentialVerifier,
  io: CredentialIo,
  nowMs: number,
  checked?: boolean,
): CredentialOutcome | PendingKeyCheck | Promise<CredentialOutcome> {
  if (checked === false) return INVALID_KEY;
  const jwt = verifier.jwt;
  if (jwt !== null && !credential.startsWith(KEY_PREFIX)) {
    const cached = jwt.peek(credential, nowMs);
    if (cached !== undefined) return fromJwt(cached, verifier, io, nowMs);
    if (!looksLikeJwt(credential)) return INVALID_TOKEN;
    return jwt.verify(credential, nowMs, io.keepAlive).then((outcome) => fromJwt(outcome, verifier, io, nowMs));
  }
  const remembered = verifier.keys.rememberedDigest(credential);
  if (remembered !== undefined) {
    const cached = verifier.keys.peek(remembered, nowMs);
    if (cached !== undefined) return judge(cached, nowMs);
  }
  if (parseApiKey(credential) === null) return NOT_A_KEY;
  if (remembered === undefined && checked === undefined) {
    const checkKey = verifier.keyCheck.peek(nowMs);
    if (checkKey === null) return INVALID_KEY;
    if (checkKey !== undefined) return { kind: "check", valid: hasValidCheck(credential, checkKey) };
  }
  return verifySlowly(credential, remembered, verifier, io, nowMs, checked === true);
}

async function verifySlowly(credential: string, remembered: string | undefined, verifier: CredentialVerifier, io: CredentialIo, nowMs: number, checked: boolean): Promise<CredentialOutcome> {
  if (remembered === undefined && !checked) {
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

/** A JWT outcome as a credential outcome; the tenant its claim names is read through the tenant cache. */
function fromJwt(outcome: JwtOutcome, verifier: CredentialVerifier, io: CredentialIo, nowMs: number): CredentialOutcome | Promise<CredentialOutcome> {
  if (!outcome.ok) return outcome.code === "auth_unavailable" ? UNAVAILABLE : outcome.code === "credential_expired" ? EXPIRED_TOKEN : INVALID_TOKEN;
  if (outcome.tenantClaimInvalid) return TENANT_UNKNOWN;
  const slug = outcome.tenant;
  if (slug === null) return { kind: "jwt", callerKey: outcome.callerKey, tenant: null };
  const cached = verifier.tenants.peek(slug, nowMs);
  if (cached !== undefined) return cached === null ? TENANT_UNKNOWN : { kind: "jwt", callerKey: outcome.callerKey, tenant: cached };
  return verifier.tenants.lookup(io.db, slug, nowMs, io.keepAlive).then(
    (tenant): CredentialOutcome => (tenant === null ? TENANT_UNKNOWN : { kind: "jwt", callerKey: outcome.callerKey, tenant }),
    (): CredentialOutcome => UNAVAILABLE,
  );
}

// Managed API keys: `tg_<id>_<secret>`. The id is public (the admin API names
// keys by it); the secret is random and never stored: D1 keeps only the
// SHA-256 of the whole key string. Both parts use a lower-case Crockford
// base32 alphabet (no `_`, no look-alike letters), so a key splits on `_`
// unambiguously and survives copy and paste.
//
// The secret's last KEY_CHECK_CHARS characters are a check: an HMAC-SHA256 of
// the rest of the key under the deployment's key-check secret (created by the
// first mint, kept in D1's `settings`). The gateway verifies it before any
// lookup, so a flood of made-up keys — random, or a real key with another
// secret — is refused without a D1 query, by any address. Without the secret
// nobody can make a key that passes.

import { bearerToken } from "../utils/bearer";
import { constantTimeEqualText, hmacBytes, sha256Hex } from "../utils/crypto";

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
/** 12 base32 characters = 60 random bits: unique enough for a primary key that is also checked by D1. */
export const KEY_ID_CHARS = 12;
/** 32 base32 characters: 26 random (130 bits) and a 6-character (30-bit) check. The listing prefix shows 4. */
export const KEY_SECRET_CHARS = 32;
/** The check at the end of the secret: 30 bits, so a made-up key passes it about once in 10^9 tries. */
export const KEY_CHECK_CHARS = 6;
/** Secret characters shown in the key's `prefix`, so an operator can recognise a key in a listing. */
export const PREFIX_SECRET_CHARS = 4;
export const KEY_PREFIX = "tg_";

const ID_PATTERN = new RegExp(`^[${ALPHABET}]{${KEY_ID_CHARS}}$`);
const KEY_PATTERN = new RegExp(`^tg_([${ALPHABET}]{${KEY_ID_CHARS}})_[${ALPHABET}]{${KEY_SECRET_CHARS}}$`);
/** Longest credential string worth parsing or hashing; anything longer is malformed. */
export const MAX_CREDENTIAL_CHARS = KEY_PREFIX.length + KEY_ID_CHARS + 1 + KEY_SECRET_CHARS;

/** A new key-check secret: 32 random bytes, hex. */
export function newKeyCheckSecret(): string {
  return [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The check characters for the key's body (everything before the check). */
function checkOf(body: string, checkKey: CryptoKey): Promise<string> {
  return hmacBytes(checkKey, body).then(checkChars);
}

// 6 characters × 5 bits from the first 30 bits of the MAC.
function checkChars(mac: Uint8Array): string {
  const bits = ((mac[0] as number) << 22) | ((mac[1] as number) << 14) | ((mac[2] as number) << 6) | ((mac[3] as number) >>> 2);
  let out = "";
  for (let i = KEY_CHECK_CHARS - 1; i >= 0; i--) out += ALPHABET[(bits >>> (i * 5)) & 31];
  return out;
}

/**
 * Whether a well-formed key's check matches (constant time over the check's
 * characters). Waits on no I/O (an HMAC, see hmacBytes): it settles in the
 * turn it was asked in.
 */
export function hasValidCheck(credential: string, checkKey: CryptoKey): Promise<boolean> {
  const at = credential.length - KEY_CHECK_CHARS;
  return checkOf(credential.slice(0, at), checkKey).then((expected) => constantTimeEqualText(expected, credential.slice(at)));
}

function randomBase32(chars: number): string {
  // One byte per character, keeping its low 5 bits: 256 is a multiple of 32,
  // so every character is uniform.
  const bytes = crypto.getRandomValues(new Uint8Array(chars));
  let out = "";
  for (const b of bytes) out += ALPHABET[b & 31];
  return out;
}

export interface MintedKey {
  readonly id: string;
  /** The whole key, shown once to the operator. */
  readonly key: string;
  /** What listings show: `tg_<id>_` and the first PREFIX_SECRET_CHARS of the secret. */
  readonly prefix: string;
  readonly digest: string;
}

/** A new key with a fresh id and secret ending in its check, and the digest to store. */
export async function mintApiKey(checkKey: CryptoKey): Promise<MintedKey> {
  const id = randomBase32(KEY_ID_CHARS);
  const body = `${KEY_PREFIX}${id}_${randomBase32(KEY_SECRET_CHARS - KEY_CHECK_CHARS)}`;
  const key = body + (await checkOf(body, checkKey));
  const secret = key.slice(KEY_PREFIX.length + KEY_ID_CHARS + 1);
  return { id, key, prefix: `${KEY_PREFIX}${id}_${secret.slice(0, PREFIX_SECRET_CHARS)}`, digest: await sha256Hex(key) };
}

/** The id of a well-formed key, or null when `credential` is not `tg_<id>_<secret>`. Does no hashing. */
export function parseApiKey(credential: string): { readonly id: string } | null {
  if (credential.length !== MAX_CREDENTIAL_CHARS) return null;
  const match = KEY_PATTERN.exec(credential);
  return match === null ? null : { id: match[1] as string };
}

/** Whether `id` has the shape of a key id (the admin API's path parameter). */
export function isKeyId(id: string): boolean {
  return ID_PATTERN.test(id);
}

/**
 * The request's credential and whether it came with a second, different one,
 * from one read of each header: `Authorization: Bearer <x>` first, then
 * `X-Api-Key` (trimmed). Null when neither is present (an Authorization
 * header with another scheme counts as absent, so Basic auth meant for the
 * origin passes through as anonymous); an empty bearer value is "", present
 * but malformed. Two that differ (after trimming) make `conflicting` true:
 * charging one while an origin that reads the other serves it would put one
 * caller's use on another's limits, so such a request is refused. The same
 * value in both is one credential.
 */
export function readCredentials(headers: Headers): { readonly credential: string | null; readonly conflicting: boolean } {
  const bearer = bearerToken(headers.get("authorization"));
  const apiKey = headers.get("x-api-key");
  const trimmed = apiKey === null ? null : apiKey.trim();
  if (bearer === null) return trimmed === null ? NO_CREDENTIAL : { credential: trimmed, conflicting: false };
  return { credential: bearer, conflicting: trimmed !== null && trimmed !== bearer };
}

const NO_CREDENTIAL = Object.freeze({ credential: null, conflicting: false });

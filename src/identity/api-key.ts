// Managed API keys: `tg_<id>_<secret>`. The id is public (the admin API names
// keys by it); the secret is random and never stored: D1 keeps only the
// SHA-256 of the whole key string. Both parts use a lower-case Crockford
// base32 alphabet (no `_`, no look-alike letters), so a key splits on `_`
// unambiguously and survives copy and paste.

const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
/** 12 base32 characters = 60 random bits: unique enough for a primary key that is also checked by D1. */
export const KEY_ID_CHARS = 12;
/** 32 base32 characters = 160 random bits; the listing prefix shows 4 of them, leaving 140 secret bits. */
export const KEY_SECRET_CHARS = 32;
/** Secret characters shown in the key's `prefix`, so an operator can recognise a key in a listing. */
export const PREFIX_SECRET_CHARS = 4;
export const KEY_PREFIX = "tg_";

const ID_PATTERN = new RegExp(`^[${ALPHABET}]{${KEY_ID_CHARS}}$`);
const KEY_PATTERN = new RegExp(`^tg_([${ALPHABET}]{${KEY_ID_CHARS}})_[${ALPHABET}]{${KEY_SECRET_CHARS}}$`);
/** Longest credential string worth parsing or hashing; anything longer is malformed. */
export const MAX_CREDENTIAL_CHARS = KEY_PREFIX.length + KEY_ID_CHARS + 1 + KEY_SECRET_CHARS;

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

/** A new key with a fresh id and secret, and the digest to store. */
export async function mintApiKey(): Promise<MintedKey> {
  const id = randomBase32(KEY_ID_CHARS);
  const secret = randomBase32(KEY_SECRET_CHARS);
  const key = `${KEY_PREFIX}${id}_${secret}`;
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

/** SHA-256 of a string's UTF-8 bytes, lower-case hex (64 characters). */
export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  let hex = "";
  for (const b of digest) hex += b.toString(16).padStart(2, "0");
  return hex;
}

/**
 * The credential a request presents: `Authorization: Bearer <x>` first, then
 * `X-Api-Key`. Null when neither is present (an Authorization header with
 * another scheme counts as absent, so Basic auth meant for the origin passes
 * through as anonymous). An empty bearer value is returned as "" — present but
 * malformed.
 */
export function readCredential(headers: Headers): string | null {
  const authorization = headers.get("authorization");
  if (authorization !== null) {
    const match = /^\s*bearer(?:\s+(.*))?$/i.exec(authorization);
    if (match !== null) return (match[1] ?? "").trim();
  }
  const apiKey = headers.get("x-api-key");
  return apiKey === null ? null : apiKey.trim();
}

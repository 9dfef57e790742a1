// The one SHA-256, HMAC and constant-time comparison of the codebase (STYLE
// 17). Workers' WebCrypto does the hashing; nothing here is hand-written
// cryptography, only hex encoding and an equality check without early exit.

const encoder = new TextEncoder();
const HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/** Lower-case hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX[bytes[i] as number];
  return out;
}

/** SHA-256 of a string's UTF-8 bytes. */
export async function sha256Bytes(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text)));
}

/** SHA-256 of a string's UTF-8 bytes, lower-case hex (64 characters). */
export async function sha256Hex(text: string): Promise<string> {
  return toHex(await sha256Bytes(text));
}

/** An HMAC-SHA256 signing key from a secret string (import once, keep it). */
export function importHmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

/**
 * An HMAC-SHA256 key derived from a secret for one purpose: the key is
 * HMAC(secret, label), so a value signed for `label` verifies under no other
 * label, and changing the secret voids everything signed before.
 */
export async function deriveHmacKey(secret: string, label: string): Promise<CryptoKey> {
  const derived = await hmacBytes(await importHmacKey(secret), label);
  return crypto.subtle.importKey("raw", derived, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

/**
 * HMAC-SHA256 of a string under `key`. Waits on no I/O: workerd's WebCrypto
 * signs before it returns, so the promise settles in the same turn, with only
 * microtasks run before it (a made-up key's check relies on it, see
 * src/identity/credential.ts). One `then`, not an async function: a flood of
 * made-up keys makes one per request.
 */
export function hmacBytes(key: CryptoKey, text: string): Promise<Uint8Array> {
  return crypto.subtle.sign("HMAC", key, encoder.encode(text)).then(asBytes);
}

function asBytes(buffer: ArrayBuffer): Uint8Array {
  return new Uint8Array(buffer);
}

/**
 * Equal-length byte strings compared without an early exit. Callers compare
 * digests (both sides hashed first), so lengths are equal and nothing about a
 * secret's length or content leaks through timing.
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

/** As constantTimeEqual, for two strings of the same length (check tags, hex digests). */
export function constantTimeEqualText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

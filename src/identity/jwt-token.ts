// Recognising a JWT among credentials: a Bearer credential of
// three base64url segments is a JWT; `tg_…` is a managed key (api-key.ts).
// The length bound comes first, so a hostile 100 KB credential is refused
// after one comparison: nothing is scanned, decoded or parsed.

/**
 * Longest JWT the gateway reads: 8 KiB. Identity providers issue tokens of
 * 0.5–2 KB (an RS256 signature alone is 342 characters); 8 KiB leaves room
 * for generous custom claims while bounding what a hostile credential costs
 * (decoding, JSON parsing, and the claims cache's memory).
 */
export const MAX_JWT_CHARS = 8 * 1024;

// Three non-empty base64url segments, no padding. The regex runs only on
// strings within MAX_JWT_CHARS and has no nested quantifiers (linear time).
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Whether `credential` has the shape of a compact JWS (three base64url
 * segments) within MAX_JWT_CHARS. Decodes nothing. A string without a dot
 * (a managed key) is refused before the regex; on a JWT the regex costs
 * about 1 µs per 350 characters, so a hot path asks the claims cache
 * (JwtVerifier.peek) first and calls this only on a miss.
 */
export function looksLikeJwt(credential: string): boolean {
  return credential.length <= MAX_JWT_CHARS && credential.indexOf(".") > 0 && JWT_SHAPE.test(credential);
}

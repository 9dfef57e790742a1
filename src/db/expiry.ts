// The one rule for time-boxed rows (overrides, blocks): `expires_at` is the
// first millisecond at which the row no longer applies; NULL never expires.

/** Whether a row with this expiry applies at `nowMs`. */
export function isActive(expiresAtMs: number | null, nowMs: number): boolean {
  return expiresAtMs === null || nowMs < expiresAtMs;
}

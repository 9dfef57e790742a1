// Waits for a gateway's `/_tollgate/health` as `npm start` does: until it
// answers 200, or until it answers 503 saying its config is invalid (then
// there is nothing to wait for: the caller prints the problem at once), or
// until the deadline.

/**
 * @param {string} url the health URL
 * @param {number} deadlineMs Unix ms
 * @param {number} [pollMs]
 * @returns {Promise<{ up: true } | { up: false, invalid: { field?: string, message?: string } | null }>}
 *   `invalid`: the config's problem as health names it; null: no answer in time.
 */
export async function waitForHealth(url, deadlineMs, pollMs = 250) {
  while (Date.now() < deadlineMs) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(Math.max(1, Math.min(5_000, deadlineMs - Date.now()))) });
      if (res.ok) return { up: true };
      if (res.status === 503) {
        const body = await res.json().catch(() => null);
        if (body !== null && body.config === "invalid") return { up: false, invalid: typeof body.error === "object" && body.error !== null ? body.error : {} };
      }
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
  return { up: false, invalid: null };
}

// @ts-check
// The session: the token the operator signed in with, kept in this tab's
// sessionStorage only — gone when the tab closes, never shared with another
// tab, never in a cookie (no script-readable cookie, nor one the browser would
// send to the data plane) and never in a URL. This is the console's only state
// that outlives a view; the role is asked of the API again on every load.

const TOKEN_KEY = "tollgate.console.token";

/** The token of this tab's session, or null when signed out (or storage is unavailable). */
export function sessionToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

/**
 * Keeps the token for this tab's session. Without sessionStorage (a locked-down
 * browser) the console still works until the page is reloaded.
 * @param {string} token
 */
export function keepSessionToken(token) {
  try {
    sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // memory only: the caller holds the token for this page's life
  }
}

export function endSession() {
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // nothing kept
  }
}

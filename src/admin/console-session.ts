// The console's session: signing in exchanges the admin or auditor token for
// a cookie, so the token never stays in the browser where a page of the
// origin, served on the same host (an uploaded HTML file under /objects/,
// say), could read it. The cookie is `HttpOnly` (no script reads it),
// `Secure`, `SameSite=Strict` and `Path=/_tollgate` (never sent to the data
// plane, so the origin never sees it), and lasts 12 hours.
//
// Its value is `<role>.<expires unix ms>.<hex HMAC-SHA256>`, signed with a
// key derived from that role's token (runtime.adminTokens.sessionKeys): a
// changed token voids every session signed with the old one, and nothing is
// stored on the server. The admin API accepts the cookie only on a request
// that also carries `X-Tollgate-Console: 1`. A cross-site page cannot add
// that header without a CORS preflight the API never grants, so a forged
// form or link carries the cookie in vain.
import type { Runtime } from "../runtime";
import { constantTimeEqualText, hmacBytes, toHex } from "../utils/crypto";
import type { AdminRole } from "./admin-env";

export const SESSION_COOKIE = "tollgate_console";
/** The header every console call sends; without it the cookie is ignored. */
export const CONSOLE_HEADER = "x-tollgate-console";
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** The cookie reaches the admin API and the console, nothing the gateway forwards. */
const COOKIE_PATH = "/_tollgate";
/** The admin API's session route, in full: the one write an auditor may make (signing in). */
export const SESSION_PATH = `${COOKIE_PATH}/admin/v1/session`;
/** A cookie value longer than this is not one the gateway wrote. */
const MAX_VALUE_CHARS = 128;

export type SessionCheck = { readonly kind: "valid"; readonly role: AdminRole; readonly expiresAtMs: number } | { readonly kind: "none" } | { readonly kind: "ended" };

function signedText(role: AdminRole, expiresAtMs: number): string {
  return `${role}.${expiresAtMs}`;
}

async function keyFor(runtime: Runtime, role: AdminRole): Promise<CryptoKey | null> {
  const tokens = runtime.adminTokens;
  if (!tokens.enabled) return null;
  return role === "admin" ? tokens.sessionKeys.admin : tokens.sessionKeys.auditor;
}

/** The `Set-Cookie` value of a new session for `role`, expiring SESSION_TTL_MS after `nowMs`. */
export async function sessionCookie(runtime: Runtime, role: AdminRole, nowMs: number): Promise<{ readonly setCookie: string; readonly expiresAtMs: number }> {
  const key = await keyFor(runtime, role);
  if (key === null) throw new Error("no session key for this role");
  const expiresAtMs = nowMs + SESSION_TTL_MS;
  const text = signedText(role, expiresAtMs);
  const value = `${text}.${toHex(await hmacBytes(key, text))}`;
  return { setCookie: `${SESSION_COOKIE}=${value}; Path=${COOKIE_PATH}; Max-Age=${SESSION_TTL_MS / 1000}; HttpOnly; Secure; SameSite=Strict`, expiresAtMs };
}

/** The `Set-Cookie` value that ends the session in the browser. */
export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=${COOKIE_PATH}; Max-Age=0; HttpOnly; Secure; SameSite=Strict`;
}

/** The session cookie's value in a Cookie header, or null. */
export function sessionCookieValue(cookieHeader: string | null | undefined): string | null {
  if (cookieHeader === null || cookieHeader === undefined) return null;
  for (const part of cookieHeader.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return null;
}

/**
 * Whether a cookie value is a live session: well formed, not past its
 * expiry (nor further ahead than a session lasts), and signed with the key
 * of its role's current token. `ended` for anything else that was presented.
 */
export async function checkSession(runtime: Runtime, value: string | null, nowMs: number): Promise<SessionCheck> {
  if (value === null || value === "") return { kind: "none" };
  if (value.length > MAX_VALUE_CHARS) return { kind: "ended" };
  const match = /^(admin|auditor)\.(\d{1,16})\.([0-9a-f]{64})$/.exec(value);
  if (match === null) return { kind: "ended" };
  const role = match[1] as AdminRole;
  const expiresAtMs = Number(match[2]);
  if (expiresAtMs <= nowMs || expiresAtMs > nowMs + SESSION_TTL_MS) return { kind: "ended" };
  const key = await keyFor(runtime, role);
  if (key === null) return { kind: "ended" };
  const expected = toHex(await hmacBytes(key, signedText(role, expiresAtMs)));
  return constantTimeEqualText(expected, match[3] as string) ? { kind: "valid", role, expiresAtMs } : { kind: "ended" };
}

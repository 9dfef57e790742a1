// The console's sign-in and sign-out (console-session.ts says what the cookie
// is and why). `GET /session` answers whether this browser holds a live
// session and as which role, with 200 either way, so a console that loads
// signed out makes no refused request; `DELETE /session` clears the cookie;
// both are registered before adminAuth. `POST /session` passes adminAuth
// with the token itself (never with a session, which could otherwise renew
// itself for ever) and sets the cookie.
import type { Hono } from "hono";
import { problem } from "../errors";
import type { AdminEnv } from "./admin-env";
import { CONSOLE_HEADER, checkSession, clearedSessionCookie, sessionCookie, sessionCookieValue } from "./console-session";

const NO_STORE = { "cache-control": "no-store" } as const;

/** GET and DELETE /session: before adminAuth (they read or clear only the browser's own cookie). */
export function registerSessionStatusRoutes(admin: Hono<AdminEnv>): void {
  admin.get("/session", async (c) => {
    const runtime = c.get("runtime");
    const fromConsole = c.req.header(CONSOLE_HEADER) === "1";
    const session = await checkSession(runtime, fromConsole ? sessionCookieValue(c.req.header("cookie")) : null, runtime.now());
    if (session.kind === "valid") return c.json({ signed_in: true, role: session.role, expires_at: new Date(session.expiresAtMs).toISOString() }, 200, NO_STORE);
    if (session.kind === "none") return c.json({ signed_in: false, ended: false }, 200, NO_STORE);
    // Expired, or signed with a token that has since changed: say so, and drop it.
    return c.json({ signed_in: false, ended: true }, 200, { ...NO_STORE, "set-cookie": clearedSessionCookie() });
  });

  admin.delete("/session", (c) => {
    if (c.req.header(CONSOLE_HEADER) !== "1") return problem("invalid_request", { detail: "Signing out is the console's: send `X-Tollgate-Console: 1`." });
    return c.json({ signed_in: false, ended: true }, 200, { ...NO_STORE, "set-cookie": clearedSessionCookie() });
  });
}

/** POST /session: after adminAuth, with the token. */
export function registerSignInRoute(admin: Hono<AdminEnv>): void {
  admin.post("/session", async (c) => {
    if (c.get("authenticatedBy") !== "token") {
      return problem("admin_unauthorized", { detail: "Sign in with the admin or auditor token: a session does not renew itself." });
    }
    const runtime = c.get("runtime");
    const role = c.get("role");
    const { setCookie, expiresAtMs } = await sessionCookie(runtime, role, runtime.now());
    return c.json({ signed_in: true, role, expires_at: new Date(expiresAtMs).toISOString() }, 200, { ...NO_STORE, "set-cookie": setCookie });
  });
}

// Who may use the admin API: `Authorization: Bearer <token>`
// matching ADMIN_TOKEN (read and write) or AUDITOR_TOKEN (read only), or the
// console's session cookie (console-session.ts) beside `X-Tollgate-Console: 1`. Both
// sides are hashed (SHA-256) and the digests compared in constant time, so
// neither the comparison nor the token's length leaks anything. Configured
// tokens are trimmed; one shorter than 32 characters disables the admin API
// (503 admin_disabled). A token in the query string is refused even when it
// is right: URLs end up in logs. Each token is rate limited on its own
// (`admin` category) in the runtime's limiter table; wrong tokens charge the
// address's auth-failure limit through the same gate as wrong API keys.
import type { MiddlewareHandler } from "hono";
import { admit, type Charge } from "../engine/gcra";
import { resolveLimits } from "../engine/resolve-limits";
import { problem } from "../errors";
import { resolveClientAddress } from "../identity/client-address";
import { authFailuresResponse } from "../limits/auth-gate";
import { rateLimitedResponse } from "../limits/rate-limit-response";
import type { Runtime } from "../runtime";
import { bearerToken } from "../utils/bearer";
import { constantTimeEqual, sha256Bytes, toHex } from "../utils/crypto";
import type { AdminEnv, AdminRole } from "./admin-env";
import { CONSOLE_HEADER, checkSession, SESSION_PATH, sessionCookieValue } from "./console-session";

/** Query parameters that look like a credential: present → 401, whatever their value. */
const CREDENTIAL_PARAMS = new Set(["token", "access_token", "admin_token", "auth", "authorization", "api_key", "apikey", "key", "bearer"]);
/** Hex characters of the token digest in the limiter subject `admin:<hex>`. */
const SUBJECT_DIGEST_CHARS = 16;

function unauthorized(detail: string): Response {
  return problem("admin_unauthorized", { detail, headers: { "www-authenticate": 'Bearer realm="tollgate-admin"' } });
}

export type AdminTokenOutcome = { readonly kind: "admin" | "auditor"; readonly digest: Uint8Array } | { readonly kind: "refused" };

/** Which role a presented token has, compared in constant time against the configured digests. */
export async function verifyAdminToken(runtime: Runtime, token: string): Promise<AdminTokenOutcome> {
  const tokens = runtime.adminTokens;
  if (!tokens.enabled) return { kind: "refused" };
  const presented = await sha256Bytes(token);
  if (constantTimeEqual(presented, await tokens.admin)) return { kind: "admin", digest: presented };
  if (tokens.auditor !== null && constantTimeEqual(presented, await tokens.auditor)) return { kind: "auditor", digest: presented };
  return { kind: "refused" };
}

/** A console session cookie as a role, like a token: the digest of that role's token keys its `admin` rate limit. */
async function sessionOutcome(runtime: Runtime, cookie: string | null): Promise<AdminTokenOutcome> {
  const tokens = runtime.adminTokens;
  const session = await checkSession(runtime, cookie, runtime.now());
  if (!tokens.enabled || session.kind !== "valid") return { kind: "refused" };
  const digest = session.role === "admin" ? await tokens.admin : await tokens.auditor;
  return digest === null ? { kind: "refused" } : { kind: session.role, digest };
}

/** Authenticates, rate limits and authorises every admin request; sets `config` and `role`. */
export function adminAuth(): MiddlewareHandler<AdminEnv> {
  return async function adminAuth(c, next) {
    const runtime = c.get("runtime");
    const tokens = runtime.adminTokens;
    if (!tokens.enabled) return problem("admin_disabled", { detail: `The admin API is disabled: ${tokens.reason}.` });
    const url = new URL(c.req.url);
    for (const name of url.searchParams.keys()) {
      if (CREDENTIAL_PARAMS.has(name.toLowerCase())) {
        return unauthorized(`A token in the query string (\`${name.slice(0, 40)}\`) is never accepted, even a valid one; send it in \`Authorization: Bearer <token>\`.`);
      }
    }
    const token = bearerToken(c.req.header("authorization"));
    const cookie = token === null ? sessionCookieValue(c.req.header("cookie")) : null;
    if (token === "" || (token === null && cookie === null)) return unauthorized("No admin token: send `Authorization: Bearer <token>`.");
    // The console's cookie counts only beside the header a cross-site page cannot send without a preflight.
    if (token === null && c.req.header(CONSOLE_HEADER) !== "1") {
      return unauthorized("A console session cookie is accepted only with the `X-Tollgate-Console: 1` header the console sends; a script sends `Authorization: Bearer <token>`.");
    }

    const config = runtime.adminConfig;
    const clientKey = resolveClientAddress(c.req.header("cf-connecting-ip") ?? null, c.req.header("x-forwarded-for") ?? null, config.trustedProxies);
    const nowMs = Date.now();
    const gate = runtime.authGate.check(clientKey, nowMs);
    if (!gate.open) return authFailuresResponse(gate.retryAfterMs);

    const outcome = token !== null ? await verifyAdminToken(runtime, token) : await sessionOutcome(runtime, cookie);
    if (outcome.kind === "refused") {
      runtime.authGate.charge(clientKey, nowMs);
      return unauthorized(token !== null ? "The admin token is not valid." : "The console session has ended (it lasts 12 hours, and a changed token ends it): sign in again.");
    }
    const role: AdminRole = outcome.kind;
    const charges: Charge[] = [
      { subject: `admin:${toHex(outcome.digest).slice(0, SUBJECT_DIGEST_CHARS)}`, category: "admin", limits: resolveLimits("admin", "admin", { defaults: config.defaults }), cost: 1 },
    ];
    const decision = admit(runtime.limiter, charges, nowMs);
    if (!decision.allowed) return rateLimitedResponse(decision, charges, config.rateLimitHeaders);

    const method = c.req.method;
    // Signing in to the console is not a write: the auditor may start a session.
    // Exactly POST /session: a suffix would also let through a write route whose last parameter spans slashes (/overrides/:caller_key{.+}).
    if (role === "auditor" && method !== "GET" && method !== "HEAD" && !(method === "POST" && c.req.path === SESSION_PATH)) {
      return problem("admin_forbidden", { detail: "The auditor token may read but not write." });
    }
    c.set("config", config);
    c.set("role", role);
    c.set("authenticatedBy", token !== null ? "token" : "session");
    await next();
  };
}

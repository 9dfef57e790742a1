// Who may use the admin API (DESIGN §8): `Authorization: Bearer <token>`
// matching ADMIN_TOKEN (read and write) or AUDITOR_TOKEN (read only). Both
// sides are hashed (SHA-256) and the digests compared in constant time, so
// neither the comparison nor the token's length leaks anything. A token in
// the query string is refused even when it is right: URLs end up in logs.
// Each token is rate limited on its own (`admin` category), in the isolate's
// shared limiter table; wrong tokens charge the address's auth_failures limit.
import type { MiddlewareHandler } from "hono";
import { type Config, loadConfig, parseConfig } from "../config";
import { admit, type Charge, wouldAdmit } from "../engine/gcra";
import { retryAfterSeconds } from "../engine/rate-limit-headers";
import { resolveLimits } from "../engine/resolve-limits";
import { problem } from "../errors";
import { sha256Hex } from "../identity/api-key";
import { resolveClientAddress } from "../identity/client-address";
import { limiterTable } from "../limits/limiter-state";
import { rateLimitedResponse } from "../limits/rate-limit-response";
import type { AdminEnv, AdminRole } from "./admin-env";

/** Query parameters that look like a credential: present → 401, whatever their value. */
const CREDENTIAL_PARAMS = new Set(["token", "access_token", "admin_token", "auth", "authorization", "api_key", "apikey", "key", "bearer"]);
/** Hex characters of the token digest in the limiter subject `admin:<hex>`. */
const SUBJECT_DIGEST_CHARS = 16;

let fallbackConfig: Config | null = null;

/** The config for admin requests: TOLLGATE, or the built-in defaults when it is invalid (the admin API must stay usable). */
function adminConfig(raw: unknown): Config {
  const result = loadConfig(raw);
  if (result.ok) return result.config;
  if (fallbackConfig === null) {
    const defaults = parseConfig({});
    if (!defaults.ok) throw new Error("built-in config does not validate");
    fallbackConfig = defaults.config;
  }
  return fallbackConfig;
}

const digestMemo = new Map<string, Uint8Array>();

async function digestBytes(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/** The configured tokens' digests, computed once per token value (an isolate sees one or two). */
async function configuredDigest(token: string): Promise<Uint8Array> {
  let digest = digestMemo.get(token);
  if (digest === undefined) {
    digest = await digestBytes(token);
    if (digestMemo.size >= 4) digestMemo.clear();
    digestMemo.set(token, digest);
  }
  return digest;
}

/** Equal-length byte strings compared without an early exit. */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

function unauthorized(detail: string): Response {
  return problem("admin_unauthorized", { detail, headers: { "www-authenticate": 'Bearer realm="tollgate-admin"' } });
}

function bearerToken(authorization: string | undefined): string | null {
  if (authorization === undefined) return null;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(authorization);
  return match === null ? null : (match[1] as string);
}

/** Authenticates, rate limits and authorises every admin request; sets `config` and `role`. */
export function adminAuth(): MiddlewareHandler<AdminEnv> {
  return async function adminAuth(c, next) {
    const adminToken = c.env.ADMIN_TOKEN;
    if (adminToken === undefined || adminToken === "") {
      return problem("admin_disabled", { detail: "The admin API is disabled: no ADMIN_TOKEN secret is set." });
    }
    const url = new URL(c.req.url);
    for (const name of url.searchParams.keys()) {
      if (CREDENTIAL_PARAMS.has(name.toLowerCase())) {
        return unauthorized(`A token in the query string (\`${name}\`) is never accepted, even a valid one; send it in \`Authorization: Bearer <token>\`.`);
      }
    }
    const token = bearerToken(c.req.header("authorization"));
    if (token === null) return unauthorized("No admin token: send `Authorization: Bearer <token>`.");

    // Wrong tokens count against the address's auth_failures limit, as wrong
    // API keys do: past it, the address is refused before any comparison.
    const config = adminConfig((c.env as { TOLLGATE?: unknown }).TOLLGATE);
    const table = limiterTable(config.limiterMaxMemoryMib);
    const failures: Charge[] = [
      {
        subject: `authfail:${resolveClientAddress(c.req.header("cf-connecting-ip") ?? null, c.req.header("x-forwarded-for") ?? null, config.trustedProxies)}`,
        category: "auth_failures",
        limits: config.authFailureLimits,
        cost: 1,
      },
    ];
    const gate = wouldAdmit(table, failures, Date.now());
    if (!gate.allowed) {
      return problem("auth_failures", {
        detail: "Too many failed authentications from this address.",
        extras: { category: "auth_failures", retry_after_ms: gate.retryAfterMs },
        headers: { "retry-after": String(retryAfterSeconds(gate.retryAfterMs)) },
      });
    }

    const presented = await digestBytes(token);
    let role: AdminRole | null = null;
    if (constantTimeEqual(presented, await configuredDigest(adminToken))) role = "admin";
    const auditorToken = c.env.AUDITOR_TOKEN;
    if (role === null && auditorToken !== undefined && auditorToken !== "" && constantTimeEqual(presented, await configuredDigest(auditorToken))) {
      role = "auditor";
    }
    if (role === null) {
      admit(table, failures, Date.now());
      return unauthorized("The admin token is not valid.");
    }

    let subjectHex = "";
    for (let i = 0; i < SUBJECT_DIGEST_CHARS / 2; i++) subjectHex += (presented[i] as number).toString(16).padStart(2, "0");
    const charges: Charge[] = [
      { subject: `admin:${subjectHex}`, category: "admin", limits: resolveLimits("admin", "admin", { defaults: config.defaults }), cost: 1 },
    ];
    const decision = admit(table, charges, Date.now());
    if (!decision.allowed) return rateLimitedResponse(decision, charges);

    const method = c.req.method;
    if (role === "auditor" && method !== "GET" && method !== "HEAD") {
      return problem("admin_forbidden", { detail: "The auditor token may read but not write." });
    }
    c.set("config", config);
    c.set("role", role);
    await next();
  };
}

/** The hex digest of a token, for tests and tools that need the limiter subject. */
export async function adminSubjectOf(token: string): Promise<string> {
  return `admin:${(await sha256Hex(token)).slice(0, SUBJECT_DIGEST_CHARS)}`;
}

// The TOLLGATE config and the seeded tenants the bench runs with.
import { randomBytes } from "node:crypto";

/** The routes of wrangler.toml: uploads reserve quota, deletes release it. */
export const ROUTES = [
  { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
  { method: "DELETE", path: "/objects/:object", quota: "release" },
];

/** The category a priced route's answer is charged in (the priced SSE case). */
export const PRICED_CATEGORY = "tokens";
/** The same SSE stream with and without cost extraction: the origin answers any /sse/ path alike. */
export const SSE_PLAIN_PATH = "/sse/plain/chat";
export const SSE_PRICED_PATH = "/sse/priced/chat";
const SSE_ROUTES = [
  { method: "GET", path: "/sse/plain/:id" },
  { method: "GET", path: "/sse/priced/:id", response_charge: { category: PRICED_CATEGORY, json: "usage.total_tokens", reserve: 500 } },
];

/** A limit nobody reaches: a billion a second. */
const HUGE = [{ count: 1_000_000_000, window_s: 1 }];

/**
 * Everything else at its default (request_log on, caches 10 s, limiter 16
 * MiB): what a deployment runs. `extra` overrides fields: `request_log`
 * for the profile without it, `jwt` (a static-key issuer from
 * bench/lib/jwt-tokens.mjs, so JWT callers can be measured). Anonymous
 * callers have a per-address limit nobody reaches, as a deployment would
 * give them one.
 */
export function tollgateConfig(mode = "enforce", extra = {}) {
  return JSON.stringify({ mode, anonymous: "allow", routes: [...ROUTES, ...SSE_ROUTES], categories: { request: { limits: { ip: HUGE } } }, ...extra });
}

/** The admitted cases' tenant, and the JWT callers whose tenant claim names it: limits and a hard quota that never refuse. */
export const UNLIMITED_TENANT = {
  limits: { request: { key: HUGE, jwt: HUGE, tenant: HUGE }, upload: { key: HUGE, tenant: HUGE }, [PRICED_CATEGORY]: { key: HUGE, jwt: HUGE, tenant: HUGE } },
  quota: { bytes: { hard: 1_000_000_000_000_000 }, objects: { hard: 1_000_000_000 } },
};

/** The 429 case: a key admitted once an hour, so every request past its first is refused. */
export const EXHAUSTED_TENANT = {
  limits: { request: { key: [{ count: 1, window_s: 3600 }], tenant: HUGE } },
};

export function adminToken() {
  return `bench-admin-${randomBytes(16).toString("hex")}`;
}

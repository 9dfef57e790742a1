// The TOLLGATE config and the seeded tenants the bench runs with.
import { randomBytes } from "node:crypto";

/** The routes of wrangler.toml: uploads reserve quota, deletes release it. */
export const ROUTES = [
  { method: "PUT", path: "/objects/:object", charges: { upload: 1 }, quota: "store" },
  { method: "DELETE", path: "/objects/:object", quota: "release" },
];

/**
 * Everything else at its default (request_log on, caches 10 s, limiter 16
 * MiB): what a deployment runs. `extra` overrides fields (the diagnostic
 * target without the request log).
 */
export function tollgateConfig(mode = "enforce", extra = {}) {
  return JSON.stringify({ mode, anonymous: "allow", routes: ROUTES, ...extra });
}

/** A limit nobody reaches: a billion a second. */
const HUGE = [{ count: 1_000_000_000, window_s: 1 }];

/** (b) and (c): limits and a hard quota that never refuse. */
export const UNLIMITED_TENANT = {
  limits: { request: { key: HUGE, tenant: HUGE }, upload: { key: HUGE, tenant: HUGE } },
  quota: { bytes: { hard: 1_000_000_000_000_000 }, objects: { hard: 1_000_000_000 } },
};

/** The abuse test's legitimate key: 100 requests/s with bursts of 200 — well above its probe, a real limit all the same. */
export const LIMITED_KEY_LIMIT = { count: 100, window_s: 1, burst: 200 };
export const LIMITED_TENANT = {
  limits: { request: { key: [LIMITED_KEY_LIMIT], tenant: [{ count: 200, window_s: 1, burst: 400 }] } },
};

export function adminToken() {
  return `bench-admin-${randomBytes(16).toString("hex")}`;
}

// The Worker's request handler: the gateway's own paths (health, admin API,
// the browser console) as a Hono app, everything else through the compiled data plane
// (src/gateway.ts), both taken from the runtime of the request's
// configuration (src/runtime.ts).
import { Hono } from "hono";
import type { AdminEnv } from "./admin/admin-env";
import { createAdminApp } from "./admin/admin-app";
import { CONSOLE_BASE, createConsoleApp } from "./console/serve";
import type { Bindings } from "./exchange";
import { problem } from "./errors";
import { errorName, log } from "./log/logger";
import { HEALTH_CONFIG_INVALID, healthOf, reportConfigAtStart, runtimeFor } from "./runtime";
import type { Background } from "./utils/wait-until";

export const TOLLGATE_PREFIX = "/_tollgate";
export const HEALTH_PATH = `${TOLLGATE_PREFIX}/health`;
export const ADMIN_BASE = `${TOLLGATE_PREFIX}/admin/v1`;

/** The request's waitUntil, or null when the app was called without an execution context (hono's getter throws then). */
function backgroundOf(c: { readonly executionCtx: Background }): Background | null {
  try {
    return c.executionCtx;
  } catch {
    return null;
  }
}

/** The control paths under /_tollgate: health, the admin API and the console. Never forwarded. */
function createControlApp(): Hono<AdminEnv> {
  const app = new Hono<AdminEnv>();
  app.use("*", async function withRuntime(c, next) {
    c.set("runtime", runtimeFor(c.env, backgroundOf(c)));
    await next();
  });
  app.get(HEALTH_PATH, (c) => {
    const health = healthOf(c.get("runtime"), c.env);
    return c.json(health, health.status === HEALTH_CONFIG_INVALID ? 503 : 200, { "cache-control": "no-store" });
  });
  app.route(ADMIN_BASE, createAdminApp());
  app.route(CONSOLE_BASE, createConsoleApp());
  app.all("*", () => problem("not_found", { detail: "No such gateway path." }));
  app.onError((err) => {
    log.error("control_failed", { error: errorName(err) });
    return problem("internal_error", { detail: "The gateway failed to handle this request." });
  });
  return app;
}

/** Whether a URL's path is under /_tollgate (the gateway's own namespace). */
function isControlPath(url: string): boolean {
  const schemeEnd = url.indexOf("://");
  const pathStart = url.indexOf("/", schemeEnd + 3);
  return pathStart !== -1 && url.startsWith(TOLLGATE_PREFIX, pathStart) && (url.length === pathStart + TOLLGATE_PREFIX.length || "/?".includes(url[pathStart + TOLLGATE_PREFIX.length]!));
}

/**
 * Needs the env the isolate starts with, if it has one (each env's runtime
 * is compiled on first use; this one's config is only checked, so a fault
 * is logged before any request); returns the Worker's fetch: health, admin
 * and console through Hono, every other path through the runtime's gateway.
 * @example const worker = createWorker(env); // env from "cloudflare:workers"
 */
export function createWorker(startEnv?: Bindings): { fetch(request: Request, env: Bindings, ctx: Background): Promise<Response> } {
  if (startEnv !== undefined) reportConfigAtStart(startEnv);
  const control = createControlApp();
  return {
    fetch(request, env, ctx) {
      if (isControlPath(request.url)) {
        // The control app takes its runtime in its own middleware.
        return Promise.resolve(control.fetch(request, env, ctx as ExecutionContext));
      }
      return runtimeFor(env, ctx).gateway(request, env, ctx);
    },
  };
}

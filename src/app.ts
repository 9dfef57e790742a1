// Builds the Hono app: the gateway's own paths first (health, admin), then the
// pipeline of DESIGN §3 in order, then the forward. Each step is a middleware
// factory from its own folder; this file only decides the order.
import { Hono } from "hono";
import { type ConfigResult, loadConfig } from "./config";
import type { GatewayEnv } from "./context";
import { problem } from "./errors";
import { clientAddress } from "./identity/client-middleware";
import { createAdminApp } from "./admin/admin-app";
import { authenticate } from "./limits/authenticate";
import { afterRequest } from "./limits/after-request";
import { checked, classify } from "./limits/classify";
import { inFlightLimit } from "./limits/in-flight";
import { rateLimit } from "./limits/rate-limit";
import { quotaCheck } from "./limits/quota";
import { matchRoute } from "./limits/route";
import { sizeLimit } from "./limits/size";
import { forwardToOrigin } from "./proxy/forward-handler";

export const TOLLGATE_PREFIX = "/_tollgate";
export const HEALTH_PATH = `${TOLLGATE_PREFIX}/health`;
export const ADMIN_BASE = `${TOLLGATE_PREFIX}/admin/v1`;
const ANONYMOUS = { kind: "anonymous", override: null } as const;

function configResult(env: GatewayEnv["Bindings"]): ConfigResult {
  return loadConfig((env as { TOLLGATE?: unknown }).TOLLGATE);
}

export function createApp(): Hono<GatewayEnv> {
  const app = new Hono<GatewayEnv>();

  app.get(HEALTH_PATH, (c) => {
    const result = configResult(c.env);
    if (result.ok) return c.json({ status: "ok" }, 200, { "cache-control": "no-store" });
    return c.json(
      { status: "ok", config: "invalid", error: { field: result.field, message: result.message } },
      200,
      { "cache-control": "no-store" },
    );
  });

  app.route(ADMIN_BASE, createAdminApp());

  // Anything else under /_tollgate is the gateway's own namespace, never forwarded.
  app.all(`${TOLLGATE_PREFIX}/*`, () => problem("not_found", { detail: "No such gateway path." }));

  // The pipeline (DESIGN §3). An invalid config refuses every gateway request.
  app.use("*", async function requireConfig(c, next) {
    const result = configResult(c.env);
    if (!result.ok) {
      return problem("config_invalid", {
        detail: `The gateway configuration is invalid at ${result.field}: ${result.message}.`,
        extras: { field: result.field },
      });
    }
    c.set("config", result.config);
    c.set("startedAtMs", Date.now());
    c.set("shadow", []);
    c.set("decision", "admitted");
    c.set("bypass", false);
    c.set("route", null);
    c.set("caller", ANONYMOUS);
    await next();
  });
  app.use("*", afterRequest());
  app.use("*", clientAddress());
  app.use("*", classify());
  app.use("*", checked(authenticate()));
  app.use("*", checked(matchRoute()));
  app.use("*", checked(rateLimit()));
  app.use("*", checked(inFlightLimit()));
  app.use("*", checked(sizeLimit()));
  app.use("*", checked(quotaCheck()));
  app.all("*", forwardToOrigin());

  app.onError((err, c) => {
    // Only the error's class reaches the log: messages can carry SQL or input.
    console.error(JSON.stringify({ level: "error", at_unix_ms: Date.now(), error: err.name, path: new URL(c.req.url).pathname }));
    return problem("internal_error", { detail: "The gateway failed to handle this request." });
  });
  app.notFound(() => problem("not_found", { detail: "No such path." }));
  return app;
}

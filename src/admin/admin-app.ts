// The admin API as a Hono sub-app, mounted at
// /_tollgate/admin/v1 by src/app.ts. Every route passes adminAuth first
// (token, query-string refusal, the `admin` rate limit, auditor read-only).
import { Hono } from "hono";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import type { AdminEnv } from "./admin-env";
import { registerAuditRoutes } from "./audit";
import { adminAuth } from "./auth";
import { registerBlockRoutes } from "./blocks";
import { registerBudgetRoutes } from "./budgets";
import { registerCallerRoutes } from "./callers";
import { registerExportRoutes } from "./export";
import { registerGlobalAccuracyRoutes } from "./global-accuracy";
import { registerKeyRoutes } from "./keys";
import { registerOpenApiRoute } from "./openapi";
import { registerOrgRoutes } from "./orgs";
import { registerOverrideRoutes } from "./overrides";
import { registerReconcileRoutes } from "./reconcile";
import { registerSessionStatusRoutes, registerSignInRoute } from "./session";
import { StorageUnavailable, storageUnavailable } from "./storage";
import { registerTenantRoutes } from "./tenants";
import { registerAlertRoutes, registerTrafficRoutes } from "./traffic";
import { registerUsageRoutes } from "./usage";

/** Needs nothing (config and tokens come per request from the runtime); returns the admin API's Hono app, mounted under /_tollgate/admin/v1. */
export function createAdminApp(): Hono<AdminEnv> {
  const admin = new Hono<AdminEnv>();
  // Whether this browser is signed in to the console, and signing out: they read only the browser's own cookie.
  registerSessionStatusRoutes(admin);
  admin.use("*", adminAuth());
  registerSignInRoute(admin);
  registerTenantRoutes(admin);
  registerKeyRoutes(admin);
  registerOverrideRoutes(admin);
  registerBlockRoutes(admin);
  registerCallerRoutes(admin);
  registerOrgRoutes(admin);
  registerBudgetRoutes(admin);
  registerUsageRoutes(admin);
  registerReconcileRoutes(admin);
  registerExportRoutes(admin);
  registerAuditRoutes(admin);
  registerTrafficRoutes(admin);
  registerAlertRoutes(admin);
  registerGlobalAccuracyRoutes(admin);
  registerOpenApiRoute(admin);
  admin.all("*", () => problem("not_found", { detail: "No such admin path or method." }));
  admin.onError((err) => {
    if (err instanceof StorageUnavailable) return storageUnavailable();
    log.error("admin_failed", { error: errorName(err) });
    return problem("internal_error", { detail: "The admin API failed to handle this request." });
  });
  return admin;
}

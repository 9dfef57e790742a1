// The control app's Hono environment (health and the admin API): the
// Worker's bindings, the runtime of the request's configuration, and what the
// auth step sets for the handlers.
import type { Config } from "../config";
import type { Bindings } from "../context";
import type { Runtime } from "../runtime";

export type AdminRole = "admin" | "auditor";

export interface AdminVars {
  runtime: Runtime;
  /** The TOLLGATE config, or the built-in defaults when it is invalid (the admin API stays usable to fix data). */
  config: Config;
  role: AdminRole;
  /** How the caller proved its role: a Bearer token, or the console's session cookie. */
  authenticatedBy: "token" | "session";
}

export interface AdminEnv {
  Bindings: Bindings;
  Variables: AdminVars;
}

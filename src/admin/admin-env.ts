// The admin sub-app's Hono environment: the Worker's bindings, and what the
// auth step sets for the handlers.
import type { Config } from "../config";
import type { Bindings } from "../context";

export type AdminRole = "admin" | "auditor";

export interface AdminVars {
  /** The TOLLGATE config, or the built-in defaults when it is invalid (the admin API stays usable to fix data). */
  config: Config;
  role: AdminRole;
}

export interface AdminEnv {
  Bindings: Bindings;
  Variables: AdminVars;
}

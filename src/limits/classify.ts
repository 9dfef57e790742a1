// Decides, once per request, whether the checks run at all: exempt paths
// (default /healthz, /readyz, /livez, /metrics) and `mode: "off"` are
// forwarded with no check and no charge. Also writes `Tollgate-Shadow` on the
// way out when shadow mode let a refusal through.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../context";

export function classify(): MiddlewareHandler<GatewayEnv> {
  return async function classify(c, next) {
    const config = c.get("config");
    if (config.exemptPaths.includes(c.req.path)) {
      c.set("decision", "exempt");
      c.set("bypass", true);
    } else if (config.mode === "off") {
      c.set("decision", "off");
      c.set("bypass", true);
    }
    await next();
    const shadow = c.get("shadow");
    if (shadow.length > 0) {
      c.res.headers.set("tollgate-shadow", shadow.join(", "));
      if (c.get("decision") === "admitted") c.set("decision", `shadow:${shadow[0]}`);
    }
  };
}

/** Runs `check` unless classify() let the request bypass the checks. */
export function checked(check: MiddlewareHandler<GatewayEnv>): MiddlewareHandler<GatewayEnv> {
  return function checkedStep(c, next) {
    return c.get("bypass") ? next() : check(c, next);
  };
}

// DESIGN §3 step 4: the first matching entry of `routes` (compiled once with
// the config) gives the request's charges and its quota action.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../context";

export function matchRoute(): MiddlewareHandler<GatewayEnv> {
  return async function matchRoute(c, next) {
    c.set("route", c.get("config").routes.match(c.req.method, c.req.path));
    await next();
  };
}

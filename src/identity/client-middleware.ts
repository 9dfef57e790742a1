// Step 1 of the pipeline: who is asking, by address. Sets c.get("clientAddress")
// (the full address, for X-Forwarded-For) and c.get("clientKey") (the limiter's
// key: IPv4, or the IPv6 /64).
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../context";
import { canonicalKey, formatAddress, resolveClient, UNKNOWN_CLIENT } from "./client-address";

export function clientAddress(): MiddlewareHandler<GatewayEnv> {
  return async function clientAddress(c, next) {
    const headers = c.req.raw.headers;
    const addr = resolveClient(headers.get("cf-connecting-ip"), headers.get("x-forwarded-for"), c.get("config").trustedProxies);
    if (addr === null) {
      c.set("clientAddress", UNKNOWN_CLIENT);
      c.set("clientKey", UNKNOWN_CLIENT);
    } else {
      c.set("clientAddress", formatAddress(addr));
      c.set("clientKey", canonicalKey(addr));
    }
    await next();
  };
}

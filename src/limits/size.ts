// DESIGN §3 step 7: a declared body over `max_request_bytes` is refused with
// 413 before anything is forwarded, naming both numbers.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../context";
import { problem } from "../errors";
import { declaredLength } from "../proxy/content-length";
import { refuse } from "./refuse";

export function sizeLimit(): MiddlewareHandler<GatewayEnv> {
  return async function sizeLimit(c, next) {
    const limit = c.get("config").maxRequestBytes;
    if (limit > 0) {
      const size = declaredLength(c.req.raw.headers);
      if (size !== null && size > limit) {
        const refused = refuse(
          c,
          "request_too_large",
          problem("request_too_large", { detail: `The body is ${size} bytes; this gateway accepts at most ${limit}.`, extras: { limit, size } }),
        );
        if (refused !== null) return refused;
      }
    }
    await next();
  };
}

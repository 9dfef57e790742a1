// DESIGN §3 step 10 and §10: after the answer, the request's metering (tenant
// `requests` and `bytes_in`, flushed to usage_monthly in the background) and
// its request-log line. Neither ever blocks or fails the response.
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "../context";
import { database } from "../db/client";
import { usageMeter } from "../db/usage-meter";
import { requestLogLine } from "../log/request-log";
import { declaredLength } from "../proxy/content-length";

function forwarded(decision: string): boolean {
  return decision === "admitted" || decision.startsWith("shadow:");
}

export function afterRequest(): MiddlewareHandler<GatewayEnv> {
  return async function afterRequest(c, next) {
    await next();
    const config = c.get("config");
    const caller = c.get("caller");
    const nowMs = Date.now();
    const decision = c.get("decision");
    const bytesIn = declaredLength(c.req.raw.headers) ?? 0;
    if (caller.kind === "key" && forwarded(decision)) {
      usageMeter.add(caller.tenant, "requests", 1, nowMs, config.usageMaxPending);
      if (bytesIn > 0) usageMeter.add(caller.tenant, "bytes_in", bytesIn, nowMs, config.usageMaxPending);
    }
    usageMeter.maybeFlush(() => database(c.env.DB), nowMs, config.usageFlushIntervalMs, (work) => {
      try {
        c.executionCtx.waitUntil(work);
      } catch {
        // No execution context: the flush still runs.
      }
    });
    if (config.requestLog) {
      console.log(requestLogLine(c, nowMs, bytesIn));
    }
  };
}

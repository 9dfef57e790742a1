// DESIGN §3 steps 4–5: the request's charges (1 `request` plus its route's
// charges) against its subjects — the caller (`key:<digest>` or
// `ip:<address or /64>`), its tenant, and for anonymous callers the optional
// `anonymous` aggregate — all or nothing, in the isolate's limiter table.
// Every charged response carries the RateLimit headers of the tightest limit.
import type { MiddlewareHandler } from "hono";
import { rateLimitRejections } from "../cache/rejection-counter";
import type { Config } from "../config";
import type { Caller, GatewayEnv } from "../context";
import { admit, type Charge } from "../engine/gcra";
import { rateLimitHeaders } from "../engine/rate-limit-headers";
import { resolveLimits } from "../engine/resolve-limits";
import type { RouteMatch } from "../engine/routes";
import { limiterTable } from "./limiter-state";
import { rateLimitedResponse } from "./rate-limit-response";
import { refuse } from "./refuse";
import { noteRefusal } from "./sustained";

export const REQUEST_CATEGORY = "request";

function chargesFor(caller: Caller, clientKey: string, config: Config, route: RouteMatch | null): Charge[] {
  const charges: Charge[] = [];
  const defaults = config.defaults;
  if (caller.kind === "key") {
    const keySources = { override: caller.override ?? undefined, key: caller.keyLimits ?? undefined, tenant: caller.tenantLimits ?? undefined, defaults };
    const tenantSources = { tenant: caller.tenantLimits ?? undefined, defaults };
    const keySubject = `key:${caller.digest}`;
    const tenantSubject = `tenant:${caller.tenant}`;
    forEachCharge(route, (category, cost) => {
      charges.push({ subject: keySubject, category, limits: resolveLimits(category, "key", keySources), cost });
      charges.push({ subject: tenantSubject, category, limits: resolveLimits(category, "tenant", tenantSources), cost });
    });
  } else {
    const ipSources = { override: caller.override ?? undefined, defaults };
    const ipSubject = `ip:${clientKey}`;
    forEachCharge(route, (category, cost) => {
      charges.push({ subject: ipSubject, category, limits: resolveLimits(category, "ip", ipSources), cost });
      const aggregate = resolveLimits(category, "anonymous", { defaults });
      if (aggregate.length > 0) charges.push({ subject: "anonymous", category, limits: aggregate, cost });
    });
  }
  return charges;
}

/** 1 `request`, then the route's own charges. */
function forEachCharge(route: RouteMatch | null, add: (category: string, cost: number) => void): void {
  add(REQUEST_CATEGORY, 1);
  if (route !== null) for (const [category, cost] of route.charges) add(category, cost);
}

export function rateLimit(): MiddlewareHandler<GatewayEnv> {
  return async function rateLimit(c, next) {
    const config = c.get("config");
    const charges = chargesFor(c.get("caller"), c.get("clientKey"), config, c.get("route"));
    const decision = admit(limiterTable(config.limiterMaxMemoryMib), charges, Date.now());
    if (!decision.allowed) {
      const denied = charges[decision.deniedChargeIndex];
      if (denied !== undefined) {
        const caller = c.get("caller");
        noteRefusal(c, rateLimitRejections, "rate_limit_sustained", denied.subject, denied.category, caller.kind === "key" ? caller.tenant : null);
      }
      const refused = refuse(c, "rate_limited", rateLimitedResponse(decision, charges));
      if (refused !== null) return refused;
    }
    const headers = rateLimitHeaders(decision, charges);
    await next();
    // On whatever answers the request after this step (the origin's, or a
    // later refusal), so every charged response carries the figures.
    if (headers.length > 0) {
      const out = c.res.headers;
      for (const [name, value] of headers) out.set(name, value);
    }
  };
}

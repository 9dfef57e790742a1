// DESIGN §3 steps 4–5: the request's charges (1 `request` plus its route's
// charges) against its subjects — the caller (`key:<digest>` or
// `ip:<address or /64>`), its tenant, and for anonymous callers the optional
// `anonymous` aggregate — all or nothing, in the runtime's limiter table.
// Every charged response carries the RateLimit headers of the tightest limit.
import { rateLimitRejections } from "../cache/rejection-counter";
import type { Caller, Exchange } from "../context";
import { admit, type Charge } from "../engine/gcra";
import type { LimiterTable } from "../engine/limiter-table";
import { rateLimitHeaders } from "../engine/rate-limit-headers";
import { type CategoryDefaults, resolveLimits } from "../engine/resolve-limits";
import type { RouteMatch } from "../engine/routes";
import type { Check } from "./check";
import { rateLimitedResponse } from "./rate-limit-response";
import { addOpenRent } from "./stream-charges";
import { noteRefusal } from "./sustained";

export const REQUEST_CATEGORY = "request";

export interface RateLimitOptions {
  readonly table: LimiterTable;
  readonly defaults: CategoryDefaults;
}

/** Every (subject, category, limits, cost) this request is charged. */
export function chargesFor(caller: Caller, defaults: CategoryDefaults, route: RouteMatch | null): Charge[] {
  const charges: Charge[] = [];
  if (caller.kind === "key") {
    const tenantLimits = caller.tenant.limits;
    const keySources = { override: caller.override, key: caller.keyLimits, tenant: tenantLimits, defaults };
    const tenantSources = { tenant: tenantLimits, defaults };
    const keySubject = `key:${caller.digest}`;
    const tenantSubject = `tenant:${caller.tenant.slug}`;
    charges.push({ subject: keySubject, category: REQUEST_CATEGORY, limits: resolveLimits(REQUEST_CATEGORY, "key", keySources), cost: 1 });
    charges.push({ subject: tenantSubject, category: REQUEST_CATEGORY, limits: resolveLimits(REQUEST_CATEGORY, "tenant", tenantSources), cost: 1 });
    if (route !== null) {
      for (const [category, cost] of route.charges) {
        charges.push({ subject: keySubject, category, limits: resolveLimits(category, "key", keySources), cost });
        charges.push({ subject: tenantSubject, category, limits: resolveLimits(category, "tenant", tenantSources), cost });
      }
    }
    return charges;
  }
  if (caller.kind === "jwt") {
    const tenant = caller.tenant;
    const jwtSources = { override: caller.override, tenant: tenant?.limits ?? null, defaults };
    const tenantSources = { tenant: tenant?.limits ?? null, defaults };
    const tenantSubject = tenant === null ? null : `tenant:${tenant.slug}`;
    const add = (category: string, cost: number): void => {
      charges.push({ subject: caller.callerKey, category, limits: resolveLimits(category, "jwt", jwtSources), cost });
      if (tenantSubject !== null) charges.push({ subject: tenantSubject, category, limits: resolveLimits(category, "tenant", tenantSources), cost });
    };
    add(REQUEST_CATEGORY, 1);
    if (route !== null) for (const [category, cost] of route.charges) add(category, cost);
    return charges;
  }
  const ipSources = { override: caller.override, defaults };
  const ipSubject = caller.callerKey;
  const add = (category: string, cost: number): void => {
    charges.push({ subject: ipSubject, category, limits: resolveLimits(category, "ip", ipSources), cost });
    const aggregate = resolveLimits(category, "anonymous", { defaults });
    if (aggregate.length > 0) charges.push({ subject: "anonymous", category, limits: aggregate, cost });
  };
  add(REQUEST_CATEGORY, 1);
  if (route !== null) for (const [category, cost] of route.charges) add(category, cost);
  return charges;
}

/** How a refused subject is named in the audit log: the caller key (`key:<id>`) rather than the key's digest. */
function auditedSubject(caller: Caller, subject: string): string {
  return subject.startsWith("key:") ? caller.callerKey : subject;
}

/**
 * Charges the request's limits, all or nothing; 429 rate_limited when one does not fit.
 * @example const limit = rateLimit({ table: runtime.limiter, defaults: config.defaults });
 */
export function rateLimit(options: RateLimitOptions): Check {
  const { table, defaults } = options;
  return function rateLimitStep(x) {
    const charges = chargesFor(x.caller, defaults, x.route);
    // A WebSocket open also prepays its first period of stream rent (DESIGN §13), in the same all-or-nothing admission.
    if (x.upgrade) addOpenRent(charges, x.caller, defaults);
    const decision = admit(table, charges, x.startedAtMs);
    if (!decision.allowed) {
      const denied = charges[decision.deniedChargeIndex];
      if (denied !== undefined) noteRefusal(x, rateLimitRejections, "rate_limit_sustained", auditedSubject(x.caller, denied.subject), denied.category, x.startedAtMs);
      const refused = x.refuse("rate_limited", rateLimitedResponse(decision, charges));
      if (refused !== null) return refused;
    }
    x.rateHeaders = rateLimitHeaders(decision, charges);
    return null;
  };
}

// DESIGN §3 steps 4–5: the request's charges (1 `request`, its route's
// charges, and the reserve of a response-priced route) against its subjects —
// the caller (`key:<digest>`, `jwt:<hex>` or `ip:<address or /64>`), its
// tenant, and for anonymous callers the optional `anonymous` aggregate — all
// or nothing, in the runtime's limiter table. Every charged response carries
// the RateLimit headers of the tightest limit.
import { rateLimitRejections } from "../cache/rejection-counter";
import type { Caller, Exchange } from "../context";
import { admit, type Charge } from "../engine/gcra";
import type { LimiterTable } from "../engine/limiter-table";
import { rateLimitHeaders } from "../engine/rate-limit-headers";
import { type CategoryDefaults, type LimitSources, resolveLimits, type SubjectKind } from "../engine/resolve-limits";
import type { RouteMatch } from "../engine/routes";
import type { ResponseCharge } from "../proxy/response-cost-spec";
import type { Check } from "./check";
import { rateLimitedResponse } from "./rate-limit-response";
import { addOpenRent } from "./stream-charges";
import { noteRefusal } from "./sustained";

export const REQUEST_CATEGORY = "request";

/** One subject a caller is charged as: its kind, its limiter subject, where its limits come from. */
export interface ChargedSubject {
  readonly kind: SubjectKind;
  readonly subject: string;
  readonly sources: LimitSources;
}

/** The subjects a caller is charged as: itself, and its tenant (or, anonymous, the aggregate). */
export function chargedSubjects(caller: Caller, defaults: CategoryDefaults): ChargedSubject[] {
  switch (caller.kind) {
    case "key": {
      const tenant = caller.tenant;
      return [
        { kind: "key", subject: `key:${caller.digest}`, sources: { override: caller.override, key: caller.keyLimits, tenant: tenant.limits, defaults } },
        { kind: "tenant", subject: `tenant:${tenant.slug}`, sources: { tenant: tenant.limits, defaults } },
      ];
    }
    case "jwt": {
      const tenant = caller.tenant;
      const own: ChargedSubject = { kind: "jwt", subject: caller.callerKey, sources: { override: caller.override, tenant: tenant?.limits ?? null, defaults } };
      return tenant === null ? [own] : [own, { kind: "tenant", subject: `tenant:${tenant.slug}`, sources: { tenant: tenant.limits, defaults } }];
    }
    case "anonymous":
      return [
        { kind: "ip", subject: caller.callerKey, sources: { override: caller.override, defaults } },
        { kind: "anonymous", subject: "anonymous", sources: { defaults } },
      ];
  }
}

/** `cost` of `category` on every subject (a subject with no limits there costs nothing to admit). */
function addCharges(charges: Charge[], subjects: readonly ChargedSubject[], category: string, cost: number): void {
  for (const { kind, subject, sources } of subjects) charges.push({ subject, category, limits: resolveLimits(category, kind, sources), cost });
}

/** Every (subject, category, limits, cost) this request is charged, the reserve of `responseCharge` included. */
export function chargesFor(subjects: readonly ChargedSubject[], route: RouteMatch | null, responseCharge: ResponseCharge | null = null): Charge[] {
  const charges: Charge[] = [];
  addCharges(charges, subjects, REQUEST_CATEGORY, 1);
  if (route !== null) for (const [category, cost] of route.charges) addCharges(charges, subjects, category, cost);
  if (responseCharge !== null) addCharges(charges, subjects, responseCharge.category, responseCharge.reserve);
  return charges;
}

/** How a refused subject is named in the audit log: the caller key (`key:<id>`) rather than the key's digest. */
function auditedSubject(caller: Caller, subject: string): string {
  return subject.startsWith("key:") ? caller.callerKey : subject;
}

export interface RateLimitOptions {
  readonly table: LimiterTable;
  readonly defaults: CategoryDefaults;
  /** Each route's response_charge, by route index. */
  readonly responseCharges: readonly (ResponseCharge | null)[];
}

/**
 * Charges the request's limits, all or nothing; 429 rate_limited when one does not fit.
 * @example const limit = rateLimit({ table: runtime.limiter, defaults: config.defaults, responseCharges: config.responseCharges });
 */
export function rateLimit(options: RateLimitOptions): Check {
  const { table, defaults, responseCharges } = options;
  return function rateLimitStep(x) {
    const route = x.route;
    // A WebSocket upgrade has no answer to price: its route's response_charge does not apply.
    const responseCharge = route === null || x.upgrade ? null : (responseCharges[route.index] ?? null);
    const subjects = chargedSubjects(x.caller, defaults);
    const charges = chargesFor(subjects, route, responseCharge);
    // A WebSocket open also prepays its first period of stream rent (DESIGN §13), in the same all-or-nothing admission.
    if (x.upgrade) addOpenRent(charges, subjects);
    const decision = admit(table, charges, x.startedAtMs);
    if (!decision.allowed) {
      const denied = charges[decision.deniedChargeIndex];
      if (denied !== undefined) noteRefusal(x, rateLimitRejections, "rate_limit_sustained", auditedSubject(x.caller, denied.subject), denied.category, x.startedAtMs);
      const refused = x.refuse("rate_limited", rateLimitedResponse(decision, charges));
      if (refused !== null) return refused;
    } else if (responseCharge !== null) {
      // The reserve's charges are the last ones: kept to settle against the same limits once the origin has answered.
      x.priced = { charge: responseCharge, reserved: charges.slice(charges.length - subjects.length), tightest: decision.tightest };
    }
    x.rateHeaders = rateLimitHeaders(decision, charges);
    return null;
  };
}

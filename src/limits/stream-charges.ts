// What a stream is charged after its open (DESIGN §13): `stream_rent` each
// period and, when the caller has limits for it, `message` per client
// message. The subjects are those of the open's charges (rate-limit.ts
// chargesFor): the caller, its tenant, and for anonymous callers the optional
// `anonymous` aggregate. Resolved once, when the stream opens: a limit changed
// while a stream is open applies to the streams opened after it.
import type { Caller } from "../context";
import type { Charge } from "../engine/gcra";
import { type CategoryDefaults, resolveLimits } from "../engine/resolve-limits";

export const STREAM_RENT_CATEGORY = "stream_rent";
export const MESSAGE_CATEGORY = "message";
/** Units of `stream_rent` per period, the open's included. */
export const STREAM_RENT_PER_PERIOD = 1;
/** Units of `message` per client message. */
export const MESSAGE_COST = 1;

/** One category's charges for `caller`, `cost` units each, against every subject it is charged to. */
export function categoryCharges(caller: Caller, defaults: CategoryDefaults, category: string, cost: number): Charge[] {
  if (caller.kind === "key") {
    const tenantLimits = caller.tenant.limits;
    return [
      { subject: `key:${caller.digest}`, category, limits: resolveLimits(category, "key", { override: caller.override, key: caller.keyLimits, tenant: tenantLimits, defaults }), cost },
      { subject: `tenant:${caller.tenant.slug}`, category, limits: resolveLimits(category, "tenant", { tenant: tenantLimits, defaults }), cost },
    ];
  }
  if (caller.kind === "jwt") {
    const tenant = caller.tenant;
    const charges: Charge[] = [{ subject: caller.callerKey, category, limits: resolveLimits(category, "jwt", { override: caller.override, tenant: tenant?.limits ?? null, defaults }), cost }];
    if (tenant !== null) charges.push({ subject: `tenant:${tenant.slug}`, category, limits: resolveLimits(category, "tenant", { tenant: tenant.limits, defaults }), cost });
    return charges;
  }
  const charges: Charge[] = [{ subject: caller.callerKey, category, limits: resolveLimits(category, "ip", { override: caller.override, defaults }), cost }];
  const aggregate = resolveLimits(category, "anonymous", { defaults });
  if (aggregate.length > 0) charges.push({ subject: "anonymous", category, limits: aggregate, cost });
  return charges;
}

/** The open's prepaid rent, added to the open's own charges so that both are admitted all or nothing. */
export function addOpenRent(charges: Charge[], caller: Caller, defaults: CategoryDefaults): void {
  for (const charge of categoryCharges(caller, defaults, STREAM_RENT_CATEGORY, STREAM_RENT_PER_PERIOD)) charges.push(charge);
}

/** Whether any of `charges` carries a limit: a category with none costs nothing to skip. */
export function anyLimited(charges: readonly Charge[]): boolean {
  for (const charge of charges) if (charge.limits.length > 0) return true;
  return false;
}

// The subjects a caller is charged as: itself, and its tenant (or, for
// anonymous callers, the `anonymous` aggregate), each with where its limits
// come from. The rate-limit step, a stream's charges, explain and the admin
// API's caller view all resolve limits from these.
import type { Caller } from "../exchange";
import type { CategoryDefaults, LimitSources, SubjectKind } from "../engine/resolve-limits";

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

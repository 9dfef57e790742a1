// Which limits apply to a subject in a category. The most specific
// source that has an entry wins outright, with no mixing: an override for the
// caller, the key's own limits, its tenant's limits for that subject kind, the
// category's configured default, the built-in default, else an empty list
// (which admits everything). An entry that is present but empty still wins.
import { compileLimits, type Limit } from "./limit";

export type SubjectKind = "key" | "jwt" | "tenant" | "ip" | "anonymous" | "admin";
/** Category → compiled limits, for one key or one caller override. */
export type KeyLimits = Readonly<Record<string, readonly Limit[]>>;
/** Category → the tenant's limits: `key` for each of its keys, `jwt` for each of its JWT callers, `tenant` for all of them together. */
export type TenantLimits = Readonly<Record<string, { key?: readonly Limit[]; jwt?: readonly Limit[]; tenant?: readonly Limit[] }>>;
/** Category → subject kind → limits, from the TOLLGATE config. */
export type CategoryDefaults = Readonly<Record<string, Partial<Record<SubjectKind, readonly Limit[]>>>>;

export interface LimitSources {
  /** The operator's override for this caller (`key:<id>`, `jwt:<hex>` or `ip:<address>`); applies to kinds key, jwt and ip. */
  override?: KeyLimits | null;
  /** The key's own limits; applies to kind key. */
  key?: KeyLimits | null;
  /** The caller's tenant's limits; `key` applies to kind key, `jwt` to kind jwt, `tenant` to kind tenant. */
  tenant?: TenantLimits | null;
  defaults?: CategoryDefaults | null;
}

/** The built-in defaults of docs/design.md, plus the auth-failure gate's limit for an address. */
export const BUILT_IN_LIMITS: CategoryDefaults = Object.freeze({
  request: Object.freeze({
    key: compileLimits([{ count: 1000, window_s: 1, burst: 2000 }]),
    // A JWT caller is one user, like a key: the same built-in default.
    jwt: compileLimits([{ count: 1000, window_s: 1, burst: 2000 }]),
    tenant: compileLimits([{ count: 2000, window_s: 1, burst: 4000 }]),
    ip: compileLimits([
      { count: 6000, window_s: 60 },
      { count: 200_000, window_s: 3600 },
    ]),
  }),
  // Stream rent: at the default 60 s period this pays for 120
  // streams held open for good; opening and closing streams spends it faster.
  stream_rent: Object.freeze({
    key: compileLimits([{ count: 120, window_s: 60 }]),
    jwt: compileLimits([{ count: 120, window_s: 60 }]),
    ip: compileLimits([{ count: 120, window_s: 60 }]),
  }),
  admin: Object.freeze({ admin: compileLimits([{ count: 10, window_s: 1, burst: 20 }]) }),
  auth_failures: Object.freeze({ ip: compileLimits([{ count: 60, window_s: 60 }]) }),
});

const NO_LIMITS: readonly Limit[] = Object.freeze([]);

// Own-property reads only: a category named like an Object.prototype member
// ("constructor") must not pick up a function.
function own<T>(record: Readonly<Record<string, T>> | null | undefined, name: string): T | undefined {
  return record != null && Object.hasOwn(record, name) ? record[name] : undefined;
}

/** The limits for `kind` in `category`: the stored arrays themselves, nothing allocated. */
export function resolveLimits(category: string, kind: SubjectKind, sources: LimitSources): readonly Limit[] {
  if (kind === "key" || kind === "ip" || kind === "jwt") {
    const override = own(sources.override, category);
    if (override !== undefined) return override;
  }
  if (kind === "key") {
    const own_ = own(sources.key, category);
    if (own_ !== undefined) return own_;
    const forKeys = own(sources.tenant, category)?.key;
    if (forKeys !== undefined) return forKeys;
  } else if (kind === "jwt") {
    const forJwts = own(sources.tenant, category)?.jwt;
    if (forJwts !== undefined) return forJwts;
  } else if (kind === "tenant") {
    const forTenant = own(sources.tenant, category)?.tenant;
    if (forTenant !== undefined) return forTenant;
  }
  const configured = own(sources.defaults, category)?.[kind];
  if (configured !== undefined) return configured;
  return own(BUILT_IN_LIMITS, category)?.[kind] ?? NO_LIMITS;
}

/** Where a subject's limits in a category come from. */
export type LimitSource = "override" | "key" | "tenant" | "category" | "builtin";

/**
 * Which source resolveLimits takes its answer from, by the same precedence;
 * null when none has an entry (nothing applies). For explain, not the hot
 * path: resolveLimits itself allocates nothing.
 */
export function limitSourceOf(category: string, kind: SubjectKind, sources: LimitSources): LimitSource | null {
  if ((kind === "key" || kind === "ip" || kind === "jwt") && own(sources.override, category) !== undefined) return "override";
  if (kind === "key") {
    if (own(sources.key, category) !== undefined) return "key";
    if (own(sources.tenant, category)?.key !== undefined) return "tenant";
  } else if (kind === "jwt") {
    if (own(sources.tenant, category)?.jwt !== undefined) return "tenant";
  } else if (kind === "tenant") {
    if (own(sources.tenant, category)?.tenant !== undefined) return "tenant";
  }
  if (own(sources.defaults, category)?.[kind] !== undefined) return "category";
  return own(BUILT_IN_LIMITS, category)?.[kind] !== undefined ? "builtin" : null;
}

/** The kind named by a subject's prefix (`key:…` → "key", `anonymous` → "anonymous"), or null for anything else. */
export function subjectKindOf(subject: string): SubjectKind | null {
  if (subject === "anonymous") return "anonymous";
  const colon = subject.indexOf(":");
  if (colon < 0) return null;
  switch (subject.slice(0, colon)) {
    case "key":
      return "key";
    case "jwt":
      return "jwt";
    case "tenant":
      return "tenant";
    case "ip":
      return "ip";
    case "admin":
      return "admin";
    default:
      return null;
  }
}

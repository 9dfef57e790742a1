// Which limits apply to a subject in a category. The most specific
// source that has an entry wins outright, with no mixing: an override for the
// caller, the key's own limits, its tenant's limits for that subject kind, the
// category's configured default, the built-in default, else an empty list
// (which admits everything). An entry that is present but empty still wins.
//
// Shadow limits never change which enforced limits apply: an entry holding
// only shadow limits (an override being tried) does not win; its limits are
// tried beside those of the entry that does (src/engine/shadow.ts). Switched
// on, it wins as any entry does.
import { compileLimits, isShadowOnly, type Limit, sameLimit } from "./limit";

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

/** The entry of source step `step` (0 override … 4 built-in) for `kind` in `category`, or undefined. */
function entryAt(step: number, category: string, kind: SubjectKind, sources: LimitSources): readonly Limit[] | undefined {
  switch (step) {
    case 0:
      return kind === "key" || kind === "ip" || kind === "jwt" ? own(sources.override, category) : undefined;
    case 1:
      return kind === "key" ? own(sources.key, category) : undefined;
    case 2: {
      const tenant = own(sources.tenant, category);
      return kind === "key" ? tenant?.key : kind === "jwt" ? tenant?.jwt : kind === "tenant" ? tenant?.tenant : undefined;
    }
    case 3:
      return own(sources.defaults, category)?.[kind];
    default:
      return own(BUILT_IN_LIMITS, category)?.[kind];
  }
}

const STEP_SOURCES: readonly LimitSource[] = ["override", "key", "tenant", "category", "builtin"];

/** Lists made by withShadows, by their two (stored, frozen) inputs: a caller's every request resolves to the same one. */
const MERGED = new WeakMap<readonly Limit[], WeakMap<readonly Limit[], readonly Limit[]>>();

/** `entry` with the shadow limits of more specific shadow-only entries beside it (a limit it already holds is its own). */
function withShadows(entry: readonly Limit[], shadows: readonly Limit[]): readonly Limit[] {
  let byEntry = MERGED.get(shadows);
  const known = byEntry?.get(entry);
  if (known !== undefined) return known;
  const out = [...entry];
  for (const limit of shadows) if (!out.some((l) => sameLimit(l, limit))) out.push(limit);
  const merged = Object.freeze(out);
  if (byEntry === undefined) MERGED.set(shadows, (byEntry = new WeakMap()));
  byEntry.set(entry, merged);
  return merged;
}

/**
 * The limits for `kind` in `category`: the stored arrays themselves, nothing
 * allocated, unless a more specific entry holds only shadow limits (then a
 * new list: the winning entry's limits and those shadow ones).
 */
export function resolveLimits(category: string, kind: SubjectKind, sources: LimitSources): readonly Limit[] {
  let shadows: readonly Limit[] | null = null;
  for (let step = 0; step < STEP_SOURCES.length; step++) {
    const entry = entryAt(step, category, kind, sources);
    if (entry === undefined) continue;
    if (!isShadowOnly(entry)) return shadows === null ? entry : withShadows(entry, shadows);
    shadows = shadows === null ? entry : withShadows(shadows, entry);
  }
  return shadows ?? NO_LIMITS;
}

/** One limit that applies, and the source it comes from (for explain: a shadow limit tried above the winning entry names its own source). */
export interface SourcedLimit {
  readonly limit: Limit;
  readonly source: LimitSource;
}

/** resolveLimits with each limit's source, by the same rule. Allocates: for explain, not the hot path. */
export function resolveSourcedLimits(category: string, kind: SubjectKind, sources: LimitSources): SourcedLimit[] {
  return resolveLimits(category, kind, sources).map((limit) => {
    for (let step = 0; step < STEP_SOURCES.length; step++) if (entryAt(step, category, kind, sources)?.includes(limit) === true) return { limit, source: STEP_SOURCES[step]! };
    return { limit, source: "builtin" as const };
  });
}

/** Where a subject's limits in a category come from. */
export type LimitSource = "override" | "key" | "tenant" | "category" | "builtin";

/**
 * Which source resolveLimits takes its answer from, by the same precedence;
 * null when none has an entry (nothing applies). For explain, not the hot
 * path: resolveLimits itself allocates nothing.
 */
export function limitSourceOf(category: string, kind: SubjectKind, sources: LimitSources): LimitSource | null {
  let shadowSource: LimitSource | null = null;
  for (let step = 0; step < STEP_SOURCES.length; step++) {
    const entry = entryAt(step, category, kind, sources);
    if (entry === undefined) continue;
    if (!isShadowOnly(entry)) return STEP_SOURCES[step]!;
    shadowSource ??= STEP_SOURCES[step]!;
  }
  return shadowSource;
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

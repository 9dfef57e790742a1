// Limits and quotas come out of D1 as JSON text the admin API validated when
// it wrote them. They are compiled here, once per cache load, never per
// request. A stored value that no longer parses (hand-edited, or written by a
// newer version) is logged and treated as absent, so the next level of the
// resolution order applies instead of the request failing.
import { compileLimits, type LimitScope, type LimitSpec } from "../engine/limit";
import { log } from "../log/logger";
import type { KeyLimits, TenantLimits } from "../engine/resolve-limits";
import type { QuotaLimits } from "../durable/quota-types";
import type { TenantInfo } from "../exchange";
import { compileStoredBudgets } from "./stored-budgets";

function logBadStored(what: string): void {
  log.warn("stored_value_invalid", { what });
}

function parseObject(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** KeyLimits JSON (`{"<category>": [Limit]}`) compiled (a limit without `scope` takes `defaultScope`); null when absent or invalid. */
export function compileStoredKeyLimits(text: string | null, what: string, defaultScope: LimitScope): KeyLimits | null {
  const raw = parseObject(text);
  if (raw === null) {
    if (text !== null) logBadStored(what);
    return null;
  }
  try {
    // Null prototype: a stored category named "__proto__" stays a plain entry.
    const out: Record<string, ReturnType<typeof compileLimits>> = Object.create(null);
    for (const [category, list] of Object.entries(raw)) {
      if (!Array.isArray(list)) throw new TypeError("not a list");
      out[category] = compileLimits(list as LimitSpec[], defaultScope);
    }
    return out;
  } catch {
    logBadStored(what);
    return null;
  }
}

type TenantCategoryLimits = TenantLimits[string];
/** The subject kinds a tenant's limits may name per category. */
const TENANT_LIMIT_KINDS = ["key", "jwt", "tenant"] as const satisfies readonly (keyof TenantCategoryLimits)[];

/** TenantLimits JSON (`{"<category>": {"key"?: [Limit], "jwt"?: [Limit], "tenant"?: [Limit]}}`) compiled (a limit without `scope` takes `defaultScope`); null when absent, empty or invalid. */
function compileStoredTenantLimits(text: string | null, what: string, defaultScope: LimitScope): TenantLimits | null {
  const raw = parseObject(text);
  if (raw === null) {
    if (text !== null) logBadStored(what);
    return null;
  }
  try {
    const out: Record<string, TenantCategoryLimits> = Object.create(null);
    for (const [category, byKind] of Object.entries(raw)) {
      if (typeof byKind !== "object" || byKind === null) throw new TypeError("not an object");
      const entry: TenantCategoryLimits = {};
      for (const kind of TENANT_LIMIT_KINDS) {
        const list = (byKind as Record<string, unknown>)[kind];
        if (list === undefined) continue;
        if (!Array.isArray(list)) throw new TypeError("not a list");
        entry[kind] = compileLimits(list as LimitSpec[], defaultScope);
      }
      out[category] = entry;
    }
    return Object.keys(out).length === 0 ? null : out;
  } catch {
    logBadStored(what);
    return null;
  }
}

/** Quota JSON; null when absent, empty or invalid (unlimited). */
function parseStoredQuota(text: string | null, what: string): QuotaLimits | null {
  const raw = parseObject(text);
  if (raw === null) {
    if (text !== null) logBadStored(what);
    return null;
  }
  return Object.keys(raw).length === 0 ? null : (raw as QuotaLimits);
}

/** A tenant's stored limits and quota, and its org's quota, as D1 returns them. */
export interface StoredTenant {
  readonly slug: string;
  readonly limits: string | null;
  readonly quota: string | null;
  readonly org: string | null;
  readonly orgQuota: string | null;
  /** Budgets JSON of the tenant and of its org (absent: none). */
  readonly budgets?: string | null;
  readonly orgBudgets?: string | null;
}

/** A tenant compiled as the gateway admits it: the one spelling for key records (joined) and tenants named by a token. */
export function compileStoredTenant(row: StoredTenant, defaultScope: LimitScope): TenantInfo {
  return {
    slug: row.slug,
    limits: compileStoredTenantLimits(row.limits, `tenants.limits of ${row.slug}`, defaultScope),
    quota: parseStoredQuota(row.quota, `tenants.quota of ${row.slug}`),
    org: row.org === null ? null : { slug: row.org, quota: parseStoredQuota(row.orgQuota, `orgs.quota of ${row.org}`) ?? {} },
    budgets: compileStoredBudgets(row.budgets, `tenants.budgets of ${row.slug}`),
    orgBudgets: row.org === null ? null : compileStoredBudgets(row.orgBudgets, `orgs.budgets of ${row.org}`),
  };
}

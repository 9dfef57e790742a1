// Rows as the admin API answers them: timestamps as ISO 8601 strings (UTC),
// stored JSON as objects, and never a digest or secret.
import type { AuditRow } from "../db/audit";
import type { BlockRow } from "../db/blocks";
import { isActive } from "../db/expiry";
import type { KeyListingRow } from "../db/keys";
import type { OrgRow } from "../db/orgs";
import type { OverrideRow } from "../db/overrides";
import type { TenantRow } from "../db/tenants";

export function iso(ms: number): string;
export function iso(ms: number | null): string | null;
export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

function json(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function presentTenant(row: TenantRow) {
  return { tenant: row.slug, org: row.org, limits: json(row.limits) ?? {}, quota: json(row.quota) ?? {}, created_at: iso(row.createdAt), updated_at: iso(row.updatedAt) };
}

export function presentKey(row: KeyListingRow) {
  return {
    id: row.id,
    tenant: row.tenant,
    name: row.name,
    prefix: row.prefix,
    created_at: iso(row.createdAt),
    expires_at: iso(row.expiresAt),
    revoked_at: iso(row.revokedAt),
    limits: json(row.limits),
    last_used_at: iso(row.lastUsedAt),
    last_used_from: row.lastUsedFrom,
    use_count: row.useCount,
  };
}

/** Whether every limit of a stored KeyLimits object is a shadow one (and there is one). */
function allShadow(limits: Record<string, unknown>): boolean {
  const all = Object.values(limits).flatMap((list) => (Array.isArray(list) ? (list as unknown[]) : []));
  return all.length > 0 && all.every((l) => typeof l === "object" && l !== null && (l as { shadow?: unknown }).shadow === true);
}

export function presentOverride(row: OverrideRow, nowMs: number) {
  const limits = json(row.limits) ?? {};
  return {
    caller_key: row.callerKey,
    limits,
    shadow: allShadow(limits),
    expires_at: iso(row.expiresAt),
    reason: row.reason,
    active: isActive(row.expiresAt, nowMs),
    updated_at: iso(row.updatedAt),
  };
}

export function presentBlock(row: BlockRow, nowMs: number) {
  return {
    id: row.id,
    target: row.target,
    expires_at: iso(row.expiresAt),
    reason: row.reason,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    active: isActive(row.expiresAt, nowMs),
    shadow: row.shadow,
    /** The policy whose penalty box wrote it (`request-ip-60s`), or null for an operator's block. */
    penalty: row.source === "penalty" && row.reason?.startsWith("penalty:") === true ? row.reason.slice("penalty:".length) : null,
  };
}

export function presentOrg(row: OrgRow) {
  return { org: row.slug, quota: json(row.quota) ?? {}, created_at: iso(row.createdAt), updated_at: iso(row.updatedAt) };
}

export function presentAuditEvent(row: AuditRow) {
  return { id: row.id, at: iso(row.at), kind: row.kind, actor: row.actor, tenant: row.tenant, subject: row.subject, detail: json(row.detail) ?? {} };
}

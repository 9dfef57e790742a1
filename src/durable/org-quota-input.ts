// Runtime checks on what the edge sends to OrgQuota; as in quota-input.ts, a
// failure is a bug at the edge and throws a TypeError naming the field.
import type { OrgAdmitRequest, OrgReportRequest } from "./org-quota-types";
import { auditWindowMs, flag, integer, name, quotaLimits, record, tenantReport, ttlMs } from "./quota-input";
import type { QuotaLimits, TenantReport } from "./quota-types";

export interface OrgReportInput {
  org: string;
  tenant: string;
  report: TenantReport;
  quota: QuotaLimits;
  nowMs: number;
  ttlMs: number;
  auditWindowMs: number;
}

export interface OrgAdmitInput extends OrgReportInput {
  growth: { bytes: number; objects: number };
  force: boolean;
}

export function orgReportInput(req: OrgReportRequest): OrgReportInput {
  const r = record(req, "request");
  return {
    org: name(r.org, "org"),
    tenant: name(r.tenant, "tenant"),
    report: tenantReport(r.report),
    quota: quotaLimits(r.quota),
    nowMs: integer(r.nowMs, "nowMs"),
    ttlMs: ttlMs(r.ttlS),
    auditWindowMs: auditWindowMs(r.auditWindowS),
  };
}

export function orgAdmitInput(req: OrgAdmitRequest): OrgAdmitInput {
  const base = orgReportInput(req);
  const r = req as unknown as Record<string, unknown>;
  const growth = { bytes: integer(r.growthBytes, "growthBytes"), objects: integer(r.growthObjects, "growthObjects") };
  if (growth.objects > 1) throw new TypeError("quota: growthObjects must be 0 or 1");
  return { ...base, growth, force: flag(r.force, "force") };
}

export function tenantSlug(value: unknown): string {
  return name(value, "tenant");
}

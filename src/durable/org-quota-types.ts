// The request and result shapes of the OrgQuota Durable Object's RPC methods.
// Units as in quota-types.ts.
//
// The org keeps, per member tenant, the newest TenantReport it has seen
// (committed bytes and objects, and what the tenant's live reservations
// hold). Its usage is their sum. An upload's tenant reservation is admitted
// by the org only if the sum with that tenant's report fits the org's hard
// quota; commits, releases and removes send the tenant's new report, which
// the org keeps when its `seq` is newer than the one it has.

import type { AuditDue, QuotaKind, QuotaLimits, QuotaWarning, TenantReport } from "./quota-types";

export interface OrgAdmitRequest {
  org: string;
  tenant: string;
  /** The tenant's report from its `reserve` answer (it includes this reservation). */
  report: TenantReport;
  /** The growth from the tenant's `reserve` answer: this upload's growth over the stored object. */
  growthBytes: number;
  growthObjects: number;
  /** The org's quota in force, from D1. */
  quota: QuotaLimits;
  nowMs: number;
  /** The edge's reservation_ttl_s: when a report that holds room is stale enough to pull again. Default 900. */
  ttlS?: number;
  auditWindowS?: number;
  /**
   * Keep the report even when the upload does not fit (shadow mode: the edge
   * forwards it whatever the answer, and the tenant keeps its reservation).
   * The answer still says `exceeded`.
   */
  force?: boolean;
}

/**
 * - `admitted`: the org's usage with this upload fits its hard quota.
 * - `exceeded`: it does not; figures as for a tenant (`usage` includes what
 *   every member's uploads in flight hold), `audit` names the org. A forced
 *   admit keeps the tenant's report all the same.
 * - `not_member`: the org dropped this tenant (dropMember) and has not taken
 *   it back (setMember); the upload is the tenant's alone.
 */
export type OrgAdmitResult =
  | { status: "admitted" }
  | { status: "exceeded"; kind: QuotaKind; quota: number; usage: number; requested: number; audit: AuditDue | null }
  | { status: "not_member" };

export interface OrgReportRequest {
  org: string;
  tenant: string;
  /** The tenant's report from a commit, release or remove answer. */
  report: TenantReport;
  /** For the soft-quota warnings. */
  quota: QuotaLimits;
  nowMs: number;
  ttlS?: number;
  auditWindowS?: number;
}

/**
 * - `applied`: the report was newer and is now the tenant's figures.
 * - `stale`: the org already had a newer one (reports can arrive out of order).
 * - `not_member`: see OrgAdmitResult.
 *
 * `bytes` / `objects` are the org's committed usage afterwards. `warnings`
 * carry `org`; `audit` is a `quota_soft_exceeded` of the org, at most one per
 * kind per audit window, only on an applied report.
 */
export interface OrgReportResult {
  status: "applied" | "stale" | "not_member";
  bytes: number;
  objects: number;
  warnings: QuotaWarning[];
  audit: AuditDue | null;
}

/** The figures the org counts for one member after setMember or dropMember. */
export interface MemberResult {
  tenant: string;
  member: boolean;
  bytes: number;
  objects: number;
  heldBytes: number;
  heldObjects: number;
}

export interface OrgUsageResult {
  bytes: number;
  objects: number;
  reserved_bytes: number;
  reserved_objects: number;
  members: number;
}

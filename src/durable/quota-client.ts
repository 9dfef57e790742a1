// The edge's side of the quota protocol, in one place: what
// to call on the tenant's TenantQuota and the org's OrgQuota, in which order,
// and what each answer means. Every function returns a tagged outcome and
// never throws for a refusal or an unreachable object; the edge maps the
// outcome to a response in one switch.
//
// An upload: `reserveUpload` (tenant reserve, then org admit of the tenant's
// growth; an org refusal releases the tenant reservation) before the body is
// read; `settleUpload` (commit on an origin 2xx, release otherwise, at the
// tenant, then the tenant's new figures to the org) after the origin answers,
// whatever the client does meanwhile. A delete: `objectNameError`
// (object-name.ts) before forwarding, `removeObject` after an origin 2xx.
//
// A tenant without an org costs one call before and one after an upload; a
// tenant in an org, two and two.

import { errorName, log } from "../log/logger";
import { parseObjectName } from "./object-name";
import type { OrgQuota } from "./org-quota";
import type { OrgAdmitResult, OrgReportResult } from "./org-quota-types";
import type { AuditDue, QuotaKind, QuotaLimits, QuotaWarning, ReserveExceeded, ReserveResult, SettleResult, TenantReport } from "./quota-types";
import type { TenantQuota } from "./tenant-quota";

export interface QuotaNamespaces {
  tenant: DurableObjectNamespace<TenantQuota>;
  org: DurableObjectNamespace<OrgQuota>;
}

/** The tenant's org and the org's quota, from D1 (cached with the tenant). */
export interface OrgQuotaRef {
  slug: string;
  quota: QuotaLimits;
}

export interface UploadInput {
  tenant: string;
  /** The tenant's quota in force. */
  quota: QuotaLimits;
  org: OrgQuotaRef | null;
  /** The route's raw `:object` parameter, still percent-encoded as in the path. */
  rawObject: string;
  /** Content-Length. */
  bytes: number;
  nowMs: number;
  /** reservation_ttl_s; default 900. */
  ttlS?: number;
  /** audit.window_s; default 60. */
  auditWindowS?: number;
  /** Default: a random UUID. */
  reservationId?: string;
  /**
   * Shadow mode: the upload is forwarded whatever the quotas say, so it is
   * reserved even past a hard quota (`reserved` with `exceeded` set) and
   * settled like any other.
   */
  force?: boolean;
}

/** What settleUpload needs; keep it from reserveUpload until the origin answers. */
export interface UploadTicket {
  readonly tenant: string;
  readonly quota: QuotaLimits;
  /** Null also when the org has dropped the tenant (it does not count this upload). */
  readonly org: OrgQuotaRef | null;
  readonly reservationId: string;
  /** The decoded object name. */
  readonly object: string;
  readonly bytes: number;
  readonly ttlS: number | undefined;
  readonly auditWindowS: number | undefined;
}

/** A hard quota an upload would pass: `scope` says whose (`org` set when it is the org's). Record `audit` when not null. */
export interface UploadExceeded {
  scope: "tenant" | "org";
  org?: string;
  quotaKind: QuotaKind;
  quota: number;
  usage: number;
  requested: number;
  audit: AuditDue | null;
}

/**
 * - `reserved`: forward the upload, then call settleUpload with the ticket
 *   (a dedup, an upload of the size already stored, too: it costs nothing
 *   but must commit). `exceeded` is set only when forced past a hard quota.
 * - `exceeded`: 403 quota_exceeded.
 * - `invalid`: 400 invalid_request (the object name); nothing was called.
 * - `unavailable`: 503 quota_unavailable with Retry-After; nothing is held,
 *   except when forced: with `ticket` set, the tenant holds the upload and
 *   it is settled like a reserved one (the org could not be asked).
 */
export type ReserveUploadOutcome =
  | { kind: "reserved"; ticket: UploadTicket; exceeded?: UploadExceeded }
  | ({ kind: "exceeded" } & UploadExceeded)
  | { kind: "invalid"; reason: string }
  | { kind: "unavailable"; scope: "tenant" | "org"; ticket?: UploadTicket };

/**
 * - `committed` (`late` when its reservation had expired: counted anyway),
 *   `released`, `replayed` (settled before), `unknown` (nothing to settle).
 * - `unavailable`: the tenant's object did not answer; the reservation
 *   expires after reservation_ttl_s, and the upload is not counted.
 *
 * `deltaBytes` is what the tenant's stored bytes changed by (for metering;
 * negative for a shrink). `warnings` are the tenant's then the org's (with
 * `org` set): write them with warningHeaderValue. Record every `audits` entry.
 */
export interface SettleUploadOutcome {
  kind: "committed" | "released" | "replayed" | "unknown" | "unavailable";
  deltaBytes: number;
  late: boolean;
  warnings: QuotaWarning[];
  audits: AuditDue[];
}

export interface RemoveInput {
  tenant: string;
  org: OrgQuotaRef | null;
  rawObject: string;
  nowMs: number;
  /** Unique per delete request; default a random UUID. */
  ref?: string;
}

export type RemoveOutcome =
  | { kind: "removed" | "unknown" | "replayed"; deltaBytes: number }
  | { kind: "invalid"; reason: string }
  | { kind: "unavailable" };

export async function reserveUpload(ns: QuotaNamespaces, input: UploadInput): Promise<ReserveUploadOutcome> {
  const name = parseObjectName(input.rawObject);
  if (name.kind === "invalid") return name;
  const ticket: UploadTicket = {
    tenant: input.tenant,
    quota: input.quota,
    org: input.org,
    reservationId: input.reservationId ?? crypto.randomUUID(),
    object: name.name,
    bytes: input.bytes,
    ttlS: input.ttlS,
    auditWindowS: input.auditWindowS,
  };
  const tenant = tenantStub(ns, ticket.tenant);
  let reserved: ReserveResult;
  try {
    // The RPC stub's types turn a union result into a union of promises; the value is the plain ReserveResult.
    reserved = await callQuota(async (): Promise<ReserveResult> =>
      tenant.reserve({
        tenant: ticket.tenant,
        object: ticket.object,
        bytes: ticket.bytes,
        quota: ticket.quota,
        reservationId: ticket.reservationId,
        nowMs: input.nowMs,
        ...optional(ticket),
        ...(input.force === true ? { force: true } : {}),
      }),
    );
  } catch (err) {
    logFailure("quota_reserve_failed", err);
    return { kind: "unavailable", scope: "tenant" };
  }
  if (reserved.status === "exceeded") return { kind: "exceeded", ...uploadExceeded("tenant", reserved) };
  // Forced past the tenant's quota: still asked at the org, which counts it.
  const tenantExceeded = reserved.exceeded === undefined ? undefined : uploadExceeded("tenant", reserved.exceeded);
  const org = ticket.org;
  // Nothing to ask the org for an upload that grows nothing over the stored
  // object (a shrink, a dedup, or the same size while another upload of it
  // is in flight); it still reports at settle.
  if (org === null || (reserved.growthBytes === 0 && reserved.growthObjects === 0)) return reservedOutcome(ticket, tenantExceeded);
  let admitted: OrgAdmitResult;
  try {
    admitted = await callQuota(async (): Promise<OrgAdmitResult> =>
      orgStub(ns, org.slug).admit({
        org: org.slug,
        tenant: ticket.tenant,
        report: reserved.report,
        growthBytes: reserved.growthBytes,
        growthObjects: reserved.growthObjects,
        quota: org.quota,
        nowMs: input.nowMs,
        ...optional(ticket),
        ...(input.force === true ? { force: true } : {}),
      }),
    );
  } catch (err) {
    logFailure("org_quota_admit_failed", err);
    // Forced: the upload goes ahead, so the tenant keeps its reservation; the org catches up from the settle's report.
    if (input.force === true) return { kind: "unavailable", scope: "org", ticket };
    await releaseRefused(ns, ticket, input.nowMs);
    return { kind: "unavailable", scope: "org" };
  }
  if (admitted.status === "admitted") return reservedOutcome(ticket, tenantExceeded);
  if (admitted.status === "not_member") return reservedOutcome({ ...ticket, org: null }, tenantExceeded);
  const orgExceeded = uploadExceeded("org", admitted, org.slug);
  // Forced: the org kept the tenant's report; the tenant's refusal, if any, is named first.
  if (input.force === true) return reservedOutcome(ticket, tenantExceeded ?? orgExceeded);
  await releaseRefused(ns, ticket, input.nowMs);
  return { kind: "exceeded", ...orgExceeded };
}

/** A tenant's or org's ReserveExceeded as the edge names it. */
function uploadExceeded(scope: "tenant" | "org", e: ReserveExceeded, org?: string): UploadExceeded {
  const figures = { quotaKind: e.kind, quota: e.quota, usage: e.usage, requested: e.requested, audit: e.audit };
  return org === undefined ? { scope, ...figures } : { scope, org, ...figures };
}

function reservedOutcome(ticket: UploadTicket, exceeded: UploadExceeded | undefined): ReserveUploadOutcome {
  return exceeded === undefined ? { kind: "reserved", ticket } : { kind: "reserved", ticket, exceeded };
}

/** Commits (`ok`: the origin answered 2xx) or releases the upload; never throws. */
export async function settleUpload(ns: QuotaNamespaces, ticket: UploadTicket, outcome: { ok: boolean; nowMs: number }): Promise<SettleUploadOutcome> {
  const tenant = tenantStub(ns, ticket.tenant);
  const { nowMs } = outcome;
  let settled: SettleResult;
  try {
    settled = outcome.ok
      ? await callQuota(async (): Promise<SettleResult> =>
          tenant.commit({ reservationId: ticket.reservationId, nowMs, quota: ticket.quota, object: ticket.object, bytes: ticket.bytes, ...auditWindow(ticket) }),
        )
      : await callQuota(async (): Promise<SettleResult> => tenant.release({ reservationId: ticket.reservationId, nowMs }));
  } catch (err) {
    logFailure(outcome.ok ? "quota_commit_failed" : "quota_release_failed", err);
    return { kind: "unavailable", deltaBytes: 0, late: false, warnings: [], audits: [] };
  }
  const orgResult = ticket.org === null ? null : await reportToOrg(ns, ticket.org, ticket.tenant, settled.report, nowMs, ticket);
  const audits = [settled.audit, orgResult?.audit ?? null].filter((a): a is AuditDue => a !== null);
  const kind = settled.status === "removed" ? "unknown" : settled.status;
  return { kind, deltaBytes: settled.deltaBytes, late: settled.late, warnings: [...settled.warnings, ...(orgResult?.warnings ?? [])], audits };
}

/** Removes the owner record after the origin deleted the object (2xx); never throws. */
export async function removeObject(ns: QuotaNamespaces, input: RemoveInput): Promise<RemoveOutcome> {
  const name = parseObjectName(input.rawObject);
  if (name.kind === "invalid") return name;
  // One ref for both tries, so a retry after a lost answer is a replay.
  const ref = input.ref ?? crypto.randomUUID();
  let removed: SettleResult;
  try {
    removed = await callQuota(async (): Promise<SettleResult> => tenantStub(ns, input.tenant).remove({ object: name.name, ref, nowMs: input.nowMs }));
  } catch (err) {
    logFailure("quota_remove_failed", err);
    return { kind: "unavailable" };
  }
  if (input.org !== null) await reportToOrg(ns, input.org, input.tenant, removed.report, input.nowMs, {});
  const kind = removed.status === "removed" || removed.status === "replayed" ? removed.status : "unknown";
  return { kind, deltaBytes: removed.deltaBytes };
}

/** `Tollgate-Quota-Warning`: `bytes 950/1000, org:acme bytes 1900/2000`; null without warnings. */
export function warningHeaderValue(warnings: readonly QuotaWarning[]): string | null {
  if (warnings.length === 0) return null;
  return warnings.map((w) => `${w.org === undefined ? "" : `org:${w.org} `}${w.kind} ${w.usage}/${w.limit}`).join(", ");
}

interface MaybeRetryable {
  retryable?: boolean;
  overloaded?: boolean;
}

/**
 * One Durable Object call, retried once only when the runtime marks the error
 * retryable and not overloaded (an overloaded object is not helped by more
 * calls). Every call here is safe to repeat: reserve by its id, commit,
 * release and remove by their ledger refs, the org's by report seq.
 */
export async function callQuota<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const e = err as MaybeRetryable;
    if (e !== null && typeof e === "object" && e.retryable === true && e.overloaded !== true) return call();
    throw err;
  }
}

/** The org's warnings and audit after it keeps the tenant's report; null when it cannot be reached (its alarm catches up). */
async function reportToOrg(
  ns: QuotaNamespaces,
  org: OrgQuotaRef,
  tenant: string,
  report: TenantReport,
  nowMs: number,
  opts: { ttlS?: number | undefined; auditWindowS?: number | undefined },
): Promise<OrgReportResult | null> {
  try {
    const result = await callQuota(async (): Promise<OrgReportResult> =>
      orgStub(ns, org.slug).report({ org: org.slug, tenant, report, quota: org.quota, nowMs, ...optional(opts) }),
    );
    return result.status === "not_member" ? null : result;
  } catch (err) {
    // The org keeps the older figures, which hold at least as much room, and
    // pulls fresh ones from the tenant after reservation_ttl_s.
    logFailure("org_quota_report_failed", err);
    return null;
  }
}

/** Releases a tenant reservation the org refused or could not check, and tells the org; failures only logged (it expires). */
async function releaseRefused(ns: QuotaNamespaces, ticket: UploadTicket, nowMs: number): Promise<void> {
  try {
    const released = await callQuota(async (): Promise<SettleResult> => tenantStub(ns, ticket.tenant).release({ reservationId: ticket.reservationId, nowMs }));
    if (ticket.org !== null) await reportToOrg(ns, ticket.org, ticket.tenant, released.report, nowMs, ticket);
  } catch (err) {
    logFailure("quota_release_failed", err);
  }
}

function tenantStub(ns: QuotaNamespaces, tenant: string): DurableObjectStub<TenantQuota> {
  return ns.tenant.get(ns.tenant.idFromName(tenant));
}

function orgStub(ns: QuotaNamespaces, org: string): DurableObjectStub<OrgQuota> {
  return ns.org.get(ns.org.idFromName(org));
}

/** ttlS and auditWindowS when set (RPC requests carry no undefined fields). */
function optional(o: { ttlS?: number | undefined; auditWindowS?: number | undefined }): { ttlS?: number; auditWindowS?: number } {
  const out: { ttlS?: number; auditWindowS?: number } = {};
  if (o.ttlS !== undefined) out.ttlS = o.ttlS;
  if (o.auditWindowS !== undefined) out.auditWindowS = o.auditWindowS;
  return out;
}

function auditWindow(o: { auditWindowS?: number | undefined }): { auditWindowS?: number } {
  return o.auditWindowS === undefined ? {} : { auditWindowS: o.auditWindowS };
}

function logFailure(event: string, err: unknown): void {
  log.error(event, { error: errorName(err) });
}

// The request and result shapes of the TenantQuota Durable Object's RPC
// methods. The edge imports these (type-only); the object validates every
// field at runtime anyway, because a stub call is a trust boundary for bugs.
//
// Units: byte counts and object counts are safe integers ≥ 0; `*Ms` fields are
// Unix time in milliseconds; `*S` fields are seconds.

export type QuotaKind = "bytes" | "objects";

/** A tenant's quota. A kind or a bound left unset is unlimited. */
export interface QuotaLimits {
  bytes?: { soft?: number; hard?: number };
  objects?: { soft?: number; hard?: number };
}

/**
 * One kind at or over its soft quota after a commit: the edge writes it as
 * `Tollgate-Quota-Warning: <kind> <usage>/<limit>`. `limit` is the hard quota,
 * or the soft one when no hard quota is set.
 */
export interface QuotaWarning {
  kind: QuotaKind;
  usage: number;
  limit: number;
  /** Set on the org's warnings: the header shows `org:<org> bytes 1900/2000`. */
  org?: string;
}

/**
 * An audit event the edge should record in D1 (`audit_events`, actor `quota`).
 * The object hands out at most one per tenant, event kind and quota kind per
 * audit window. `limit` is the quota that was crossed: the hard one for
 * `quota_hard_exceeded`, the soft one for `quota_soft_exceeded`.
 */
export interface AuditDue {
  kind: "quota_soft_exceeded" | "quota_hard_exceeded";
  /** The tenant the upload belongs to (also for an org's events). */
  tenant: string;
  /** Set when the quota crossed is the org's (OrgQuota), not the tenant's. */
  org?: string;
  quotaKind: QuotaKind;
  usage: number;
  limit: number;
  /** Bytes (or 1 object) the refused upload asked for; hard refusals only. */
  requested?: number;
}

export interface ReserveRequest {
  tenant: string;
  object: string;
  /** The upload's Content-Length. */
  bytes: number;
  /** The tenant's quota in force, from D1. */
  quota: QuotaLimits;
  /** Unique per upload; also the ledger ref of its commit or release. */
  reservationId: string;
  nowMs: number;
  /** Seconds until an unsettled reservation expires; default 900. */
  ttlS?: number;
  /** Seconds between two audits of the same kind; default 60. */
  auditWindowS?: number;
  /**
   * Record the reservation even past a hard quota (shadow mode: the edge
   * forwards the upload whatever the answer, so it must be counted). The
   * answer is then `reserved`, with `exceeded` saying what enforce would have
   * refused.
   */
  force?: boolean;
}

export interface CommitRequest {
  reservationId: string;
  nowMs: number;
  /** The quota in force, for the soft-quota warnings. */
  quota: QuotaLimits;
  auditWindowS?: number;
  /**
   * The upload's object and Content-Length, as reserved. With them a commit
   * that arrives after its reservation expired still records the owner and
   * the bytes (a late commit: the origin stored them). Without them (the
   * first RPC shape) such a commit answers `unknown` and counts nothing.
   */
  object?: string;
  bytes?: number;
}

export interface ReleaseRequest {
  reservationId: string;
  nowMs: number;
}

export interface RemoveRequest {
  object: string;
  /** Unique per delete request: a replay with the same ref changes nothing. */
  ref: string;
  nowMs: number;
}

/**
 * A tenant's figures after a change, for its org (OrgQuota). `seq` grows with
 * every change the object makes, so the org keeps the newest report whatever
 * order reports reach it in. `heldBytes` / `heldObjects` are the room the live
 * reservations hold (see UsageResult).
 */
export interface TenantReport {
  seq: number;
  bytes: number;
  objects: number;
  heldBytes: number;
  heldObjects: number;
}

/**
 * - `reserved`: the upload may go ahead; commit or release `reservationId`
 *   after (always: even a reservation that grows nothing moves the owner
 *   record to the new size at commit). `growthBytes` and `growthObjects`
 *   (0 or 1) are the upload's growth over the stored object: the whole size
 *   and one object for a new object, new − old when positive for an
 *   overwrite, both 0 for a shrink or a dedup (the size already stored: no
 *   quota charged, but it commits like any other, so a delete or shrink that
 *   lands meanwhile is charged back). The org must admit it when either is
 *   above 0. (What the tenant holds for it can be less: another upload of
 *   the same object in flight may already cover it; see UsageResult.)
 *   `exceeded` is set only on a forced reserve that passed a hard quota.
 * - `exceeded`: the upload would pass the hard quota of `kind`. `usage` is the
 *   committed usage plus what live reservations hold, `requested` what this
 *   upload would add to that (bytes, or 1 for `objects`), `quota` the hard limit.
 */
export type ReserveResult =
  | { status: "reserved"; reservationId: string; growthBytes: number; growthObjects: number; report: TenantReport; exceeded?: ReserveExceeded }
  | ({ status: "exceeded" } & ReserveExceeded);

/** A hard quota an upload would pass: see ReserveResult. */
export interface ReserveExceeded {
  kind: QuotaKind;
  quota: number;
  usage: number;
  requested: number;
  audit: AuditDue | null;
}

/**
 * The outcome of commit, release or remove. `bytes` and `objects` are the
 * committed usage afterwards; `deltaBytes` / `deltaObjects` what this call
 * changed it by (negative when it gave room back).
 *
 * - `committed`: the owner record now has the upload's size: a new record
 *   (`deltaObjects` 1), or an existing one moved to the new size (the last
 *   commit of an object wins; a shrink has `deltaBytes` < 0). `late` when the
 *   reservation had already expired: recorded anyway, because the origin
 *   stored the bytes, even past the hard quota; the object writes a
 *   `reservation_late_commit` audit event to D1 itself.
 * - `released`: the reservation was dropped.
 * - `removed`: the owner record was deleted and its bytes and object given back.
 * - `replayed`: this ref was settled before; nothing changed.
 * - `unknown`: nothing to settle: a release of a reservation that was never
 *   made; a commit of one never made, released, dropped by a purge, or
 *   expired more than a day ago (the ledger forgets), or of an expired one
 *   without `object` and `bytes`; a remove of an object the tenant does not own.
 *
 * `report` is the tenant's figures afterwards, for its org.
 */
export interface SettleResult {
  status: "committed" | "released" | "removed" | "replayed" | "unknown";
  bytes: number;
  objects: number;
  deltaBytes: number;
  deltaObjects: number;
  late: boolean;
  warnings: QuotaWarning[];
  audit: AuditDue | null;
  report: TenantReport;
}

/**
 * What live reservations hold is not the sum of their sizes: per object, it
 * is the largest upload of it in flight minus its stored size (when
 * positive), and one object for an object not stored yet. That is the most
 * any order of their commits can add, so it is all they need to hold.
 */
export interface UsageResult {
  bytes: number;
  objects: number;
  /** Bytes held by reservations not yet committed, released or expired. */
  reserved_bytes: number;
  /** Objects held: names not stored yet with an upload in flight. */
  reserved_objects: number;
  /** Live reservations (uploads in flight). */
  reservations: number;
}

/** What `purge` dropped: the committed usage the tenant had. */
export interface PurgeResult {
  bytes: number;
  objects: number;
}

/** `drift` = after − before: positive when the counters had been too low. */
export interface ReindexResult {
  before: { bytes: number; objects: number };
  after: { bytes: number; objects: number };
  drift: { bytes: number; objects: number };
}

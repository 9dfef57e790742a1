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
}

/**
 * An audit event the edge should record in D1 (`audit_events`, actor `quota`).
 * The object hands out at most one per tenant, event kind and quota kind per
 * audit window. `limit` is the quota that was crossed: the hard one for
 * `quota_hard_exceeded`, the soft one for `quota_soft_exceeded`.
 */
export interface AuditDue {
  kind: "quota_soft_exceeded" | "quota_hard_exceeded";
  tenant: string;
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
}

export interface CommitRequest {
  reservationId: string;
  nowMs: number;
  /** The quota in force, for the soft-quota warnings. */
  quota: QuotaLimits;
  auditWindowS?: number;
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
 * - `reserved`: the upload may go ahead; commit or release `reservationId` after.
 * - `dedup`: the tenant already owns the object; no quota charged, nothing to
 *   commit or release.
 * - `exceeded`: the upload would pass the hard quota of `kind`. `usage` is the
 *   committed usage plus the live reservations of that kind, `requested` the
 *   bytes asked for (or 1 for `objects`), `quota` the hard limit.
 */
export type ReserveResult =
  | { status: "reserved"; reservationId: string }
  | { status: "dedup" }
  | { status: "exceeded"; kind: QuotaKind; quota: number; usage: number; requested: number; audit: AuditDue | null };

/**
 * The outcome of commit, release or remove. `bytes` and `objects` are the
 * committed usage afterwards; `deltaBytes` what this call changed it by.
 *
 * - `committed`: the reservation became an owner record (`deltaBytes` > 0),
 *   or the object was owned meanwhile by a racing upload and the reservation
 *   was dropped without charging anything (`deltaBytes` 0).
 * - `released`: the reservation was dropped.
 * - `removed`: the owner record was deleted and its bytes and object given back.
 * - `replayed`: this ref was settled before; nothing changed.
 * - `unknown`: nothing to settle: a commit or release of a reservation that was
 *   never made, or a commit of one already released or expired (the upload is
 *   not counted); a remove of an object the tenant does not own.
 */
export interface SettleResult {
  status: "committed" | "released" | "removed" | "replayed" | "unknown";
  bytes: number;
  objects: number;
  deltaBytes: number;
  warnings: QuotaWarning[];
  audit: AuditDue | null;
}

export interface UsageResult {
  bytes: number;
  objects: number;
  /** Bytes held by reservations not yet committed, released or expired. */
  reserved_bytes: number;
  reservations: number;
}

/** `drift` = after − before: positive when the counters had been too low. */
export interface ReindexResult {
  before: { bytes: number; objects: number };
  after: { bytes: number; objects: number };
  drift: { bytes: number; objects: number };
}

// Runtime checks on what the edge sends to TenantQuota and OrgQuota. A failure is a bug at
// the edge (config is validated there, Content-Length parsed there), so it
// throws a TypeError naming the field, which RPC carries back to the caller.

import { MAX_OBJECT_NAME_BYTES, storableObjectName } from "./object-name";
import type { CommitRequest, QuotaLimits, ReleaseRequest, RemoveRequest, ReserveRequest, TenantReport } from "./quota-types";

const MAX_NAME_CHARS = 4096;
/** reservation_ttl_s when the edge sends none; OrgQuota pulls by it too before it has seen one. */
export const DEFAULT_RESERVATION_TTL_S = 900;
const DEFAULT_AUDIT_WINDOW_S = 60;

/** A safe integer ≥ `min`. */
export function integer(value: unknown, field: string, min = 0): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new TypeError(`quota: ${field} must be a safe integer >= ${min}`);
  }
  return value;
}

/** A tenant or org slug, a reservation id or a ref. */
export function name(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_NAME_CHARS) {
    throw new TypeError(`quota: ${field} must be a non-empty string of at most ${MAX_NAME_CHARS} characters`);
  }
  return value;
}

/** A decoded object name the store can hold (the edge refuses others with 400 first). */
function objectName(value: unknown): string {
  if (typeof value !== "string" || !storableObjectName(value)) {
    throw new TypeError(`quota: object must be a non-empty, well-formed string of at most ${MAX_OBJECT_NAME_BYTES} UTF-8 bytes`);
  }
  return value;
}

export function record(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`quota: ${field} must be an object`);
  }
  return value as Record<string, unknown>;
}

function bounds(value: unknown, field: string): { soft?: number; hard?: number } | undefined {
  if (value === undefined) return undefined;
  const o = record(value, field);
  const out: { soft?: number; hard?: number } = {};
  if (o.soft !== undefined) out.soft = integer(o.soft, `${field}.soft`);
  if (o.hard !== undefined) out.hard = integer(o.hard, `${field}.hard`);
  return out;
}

export function quotaLimits(value: unknown): QuotaLimits {
  const o = record(value, "quota");
  const out: QuotaLimits = {};
  const bytes = bounds(o.bytes, "quota.bytes");
  const objects = bounds(o.objects, "quota.objects");
  if (bytes) out.bytes = bytes;
  if (objects) out.objects = objects;
  return out;
}

export interface ReserveInput {
  tenant: string;
  object: string;
  bytes: number;
  quota: QuotaLimits;
  reservationId: string;
  nowMs: number;
  expiresAtMs: number;
  auditWindowMs: number;
  force: boolean;
}

export function reserveInput(req: ReserveRequest): ReserveInput {
  const r = record(req, "request");
  const nowMs = integer(r.nowMs, "nowMs");
  const expiresAtMs = nowMs + ttlMs(r.ttlS);
  if (!Number.isSafeInteger(expiresAtMs)) throw new TypeError("quota: nowMs + ttlS is out of range");
  return {
    tenant: name(r.tenant, "tenant"),
    object: objectName(r.object),
    bytes: integer(r.bytes, "bytes"),
    quota: quotaLimits(r.quota),
    reservationId: name(r.reservationId, "reservationId"),
    nowMs,
    expiresAtMs,
    auditWindowMs: auditWindowMs(r.auditWindowS),
    force: flag(r.force, "force"),
  };
}

/** An optional boolean, false when absent. */
export function flag(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== "boolean") throw new TypeError(`quota: ${field} must be a boolean`);
  return value;
}

export interface CommitInput {
  reservationId: string;
  nowMs: number;
  quota: QuotaLimits;
  auditWindowMs: number;
  /** Both or neither: what a late commit records. */
  upload: { object: string; bytes: number } | null;
}

export function commitInput(req: CommitRequest): CommitInput {
  const r = record(req, "request");
  if ((r.object === undefined) !== (r.bytes === undefined)) throw new TypeError("quota: commit takes both object and bytes, or neither");
  return {
    reservationId: name(r.reservationId, "reservationId"),
    nowMs: integer(r.nowMs, "nowMs"),
    quota: quotaLimits(r.quota),
    auditWindowMs: auditWindowMs(r.auditWindowS),
    upload: r.object === undefined ? null : { object: objectName(r.object), bytes: integer(r.bytes, "bytes") },
  };
}

export function releaseInput(req: ReleaseRequest): { reservationId: string; nowMs: number } {
  const r = record(req, "request");
  return { reservationId: name(r.reservationId, "reservationId"), nowMs: integer(r.nowMs, "nowMs") };
}

export function removeInput(req: RemoveRequest): { object: string; ref: string; nowMs: number } {
  const r = record(req, "request");
  return { object: objectName(r.object), ref: name(r.ref, "ref"), nowMs: integer(r.nowMs, "nowMs") };
}

export function tenantReport(value: unknown): TenantReport {
  const r = record(value, "report");
  return {
    seq: integer(r.seq, "report.seq"),
    bytes: integer(r.bytes, "report.bytes"),
    objects: integer(r.objects, "report.objects"),
    heldBytes: integer(r.heldBytes, "report.heldBytes"),
    heldObjects: integer(r.heldObjects, "report.heldObjects"),
  };
}

export function auditWindowMs(value: unknown): number {
  const s = value === undefined ? DEFAULT_AUDIT_WINDOW_S : integer(value, "auditWindowS");
  const ms = s * 1000;
  if (!Number.isSafeInteger(ms)) throw new TypeError("quota: auditWindowS is out of range");
  return ms;
}

export function ttlMs(value: unknown): number {
  const s = value === undefined ? DEFAULT_RESERVATION_TTL_S : integer(value, "ttlS", 1);
  const ms = s * 1000;
  if (!Number.isSafeInteger(ms)) throw new TypeError("quota: ttlS is out of range");
  return ms;
}

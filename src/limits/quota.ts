// DESIGN §3 step 8 and §5 at the edge. For a `store` route: Content-Length is
// required (411), the tenant's Durable Object reserves room before the body is
// read (403 quota_exceeded when it would pass a hard quota, nothing
// forwarded); the reservation is committed after an origin 2xx or released
// otherwise by the settlement (src/limits/settle.ts), which runs under
// waitUntil, so a client that hangs up cannot leave it unsettled. For a
// `release` route: after an origin 2xx the owner record is removed. One
// Durable Object call before and one after an upload; none for any other
// request. The object unreachable → 503 quota_unavailable (fail closed) on
// store routes only.
//
// Anonymous callers have no tenant and so no quota: their store routes still
// need Content-Length, and are otherwise forwarded as they are.
import type { Exchange, TenantInfo } from "../context";
import type { AuditDue, QuotaLimits, QuotaWarning, ReserveResult, SettleResult } from "../durable/quota-types";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import { keepAlive } from "../utils/wait-until";
import type { Check } from "./check";

/** Seconds a client is told to wait when the quota object cannot answer. */
export const QUOTA_UNAVAILABLE_RETRY_AFTER_S = 1;
const NO_QUOTA: QuotaLimits = {};

/** An upload's reservation, settled once the origin answered. */
export interface UploadReservation {
  readonly tenant: string;
  readonly reservationId: string;
  readonly quota: QuotaLimits;
}

/** A delete on a `release` route: the owner record goes once the origin answered 2xx. */
export interface Removal {
  readonly tenant: string;
  readonly object: string;
}

export interface QuotaOptions {
  readonly reservationTtlS: number;
  readonly auditWindowS: number;
}

function quotaStub(x: Exchange, tenant: string) {
  return x.env.TENANT_QUOTA.get(x.env.TENANT_QUOTA.idFromName(tenant));
}

interface MaybeRetryable {
  retryable?: boolean;
  overloaded?: boolean;
}

/**
 * One Durable Object call, retried once only when the runtime marks the error
 * retryable and not overloaded (an overloaded object is not helped by more calls).
 */
async function callQuota<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    const e = err as MaybeRetryable;
    if (e !== null && typeof e === "object" && e.retryable === true && e.overloaded !== true) return call();
    throw err;
  }
}

/** The object name: the route's `:object` parameter, else the request path. */
function objectName(x: Exchange): string {
  return x.route?.params.object ?? x.path;
}

export function warningHeader(warnings: readonly QuotaWarning[]): string | null {
  if (warnings.length === 0) return null;
  return warnings.map((w) => `${w.kind} ${w.usage}/${w.limit}`).join(", ");
}

/** Writes a quota audit event the object handed out, in the background. */
export function recordQuotaAudit(x: Exchange, audit: AuditDue | null): void {
  if (audit === null) return;
  const env = x.env;
  keepAlive(
    x.ctx,
    insertAuditEvent(database(env.DB), {
      atMs: Date.now(),
      kind: audit.kind,
      actor: "quota",
      tenant: audit.tenant,
      subject: null,
      detail: { quota_kind: audit.quotaKind, usage: audit.usage, limit: audit.limit, ...(audit.requested === undefined ? {} : { requested: audit.requested }) },
    })
      .run()
      .catch((err: unknown) => log.error("audit_write_failed", { error: errorName(err) })),
  );
}

function unavailable(x: Exchange): Response | null {
  return x.refuse(
    "quota_unavailable",
    problem("quota_unavailable", {
      detail: "The tenant's storage quota could not be checked; nothing was stored.",
      headers: { "retry-after": String(QUOTA_UNAVAILABLE_RETRY_AFTER_S) },
    }),
  );
}

async function reserve(x: Exchange, options: QuotaOptions, tenant: TenantInfo, bytes: number): Promise<Response | null> {
  const quota = tenant.quota ?? NO_QUOTA;
  const stub = quotaStub(x, tenant.slug);
  const reservationId = crypto.randomUUID();
  let reserved: ReserveResult;
  try {
    // The RPC stub's types turn a union result into a union of promises; the
    // value is the plain ReserveResult.
    reserved = await callQuota(async (): Promise<ReserveResult> =>
      stub.reserve({
        tenant: tenant.slug,
        object: objectName(x),
        bytes,
        quota,
        reservationId,
        nowMs: Date.now(),
        ttlS: options.reservationTtlS,
        auditWindowS: options.auditWindowS,
      }),
    );
  } catch (err) {
    log.error("quota_reserve_failed", { error: errorName(err) });
    return unavailable(x);
  }
  if (reserved.status === "exceeded") {
    recordQuotaAudit(x, reserved.audit);
    return x.refuse(
      "quota_exceeded",
      problem("quota_exceeded", {
        detail: `This upload of ${reserved.requested} ${reserved.kind === "bytes" ? "bytes" : "object"} would pass the tenant's hard ${reserved.kind} quota of ${reserved.quota} (in use: ${reserved.usage}).`,
        extras: { kind: reserved.kind, quota: reserved.quota, usage: reserved.usage, requested: reserved.requested },
      }),
    );
  }
  if (reserved.status === "reserved") x.upload = { tenant: tenant.slug, reservationId, quota };
  return null;
}

/**
 * Reserves quota for uploads on `store` routes and marks deletes on `release` routes.
 * @example const quota = quotaCheck({ reservationTtlS: 900, auditWindowS: 60 });
 */
export function quotaCheck(options: QuotaOptions): Check {
  return function quotaStep(x) {
    const action = x.route?.quota ?? null;
    if (action === null) return null;
    const tenant = x.tenant;
    if (action === "store") {
      const bytes = x.declaredBytes;
      if (bytes === null) {
        return x.refuse("length_required", problem("length_required", { detail: "Uploads on this route must declare their size in Content-Length." }));
      }
      if (tenant === null) return null;
      return reserve(x, options, tenant, bytes);
    }
    if (tenant !== null) x.removal = { tenant: tenant.slug, object: objectName(x) };
    return null;
  };
}

/** The quota outcome of a forwarded request, for its answer and its metering. */
export interface QuotaSettled {
  readonly tenant: string;
  readonly deltaBytes: number;
  readonly warnings: readonly QuotaWarning[];
}

/**
 * Commits (origin 2xx) or releases the upload's reservation, or removes the
 * deleted object's owner record after a 2xx. Never throws: a failure is
 * logged, and an unsettled reservation expires after reservation_ttl_s.
 */
export async function settleQuota(x: Exchange, options: QuotaOptions, ok: boolean): Promise<QuotaSettled | null> {
  const upload = x.upload;
  if (upload !== null) {
    const stub = quotaStub(x, upload.tenant);
    const nowMs = Date.now();
    let settled: SettleResult;
    try {
      settled = ok
        ? await callQuota(() => stub.commit({ reservationId: upload.reservationId, nowMs, quota: upload.quota, auditWindowS: options.auditWindowS }))
        : await callQuota(() => stub.release({ reservationId: upload.reservationId, nowMs }));
    } catch (err) {
      log.error(ok ? "quota_commit_failed" : "quota_release_failed", { error: errorName(err) });
      return null;
    }
    recordQuotaAudit(x, settled.audit);
    return { tenant: upload.tenant, deltaBytes: settled.deltaBytes, warnings: settled.warnings };
  }
  const removal = x.removal;
  if (removal !== null && ok) {
    try {
      const removed = await callQuota(() => quotaStub(x, removal.tenant).remove({ object: removal.object, ref: crypto.randomUUID(), nowMs: Date.now() }));
      return { tenant: removal.tenant, deltaBytes: removed.deltaBytes, warnings: [] };
    } catch (err) {
      // The origin deleted the object; the bytes stay counted until a reindex.
      log.error("quota_remove_failed", { error: errorName(err) });
    }
  }
  return null;
}

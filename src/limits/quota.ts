// Pipeline step 8 (docs/design.md) and the quota protocol at the edge. For a `store` route: Content-Length is
// required (411), an object name the store cannot hold is refused (400
// invalid_request), and the tenant's (and its org's) quota objects reserve
// room before the body is read (403 quota_exceeded when it would pass a hard
// quota, nothing forwarded). The settlement (src/limits/settle.ts), which
// runs under waitUntil so a client that hangs up cannot skip it, commits
// after an origin 2xx and releases otherwise. For a `release` route: after an
// origin 2xx the owner record is removed. The protocol itself — which object
// is called, in which order, what each answer means — is
// src/durable/quota-client.ts; this file maps its outcomes to answers. The
// objects unreachable → 503 quota_unavailable (fail closed) on store routes
// only.
//
// Anonymous callers, and JWT callers whose token names no tenant, have no
// quota: their store routes still need Content-Length, and are otherwise
// forwarded as they are.
import type { Exchange } from "../context";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import { type OrgQuotaRef, type QuotaNamespaces, removeObject, reserveUpload, settleUpload, type UploadExceeded, type UploadTicket } from "../durable/quota-client";
import { objectNameError } from "../durable/object-name";
import type { AuditDue, QuotaWarning } from "../durable/quota-types";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import { keepAlive } from "../utils/wait-until";
import { alertAbout } from "../alerts/raise";
import type { Check } from "./check";

/** Seconds a client is told to wait when the quota object cannot answer. */
export const QUOTA_UNAVAILABLE_RETRY_AFTER_S = 1;

/** An upload's reservation, settled once the origin answered. */
export type UploadReservation = UploadTicket;

/** A delete on a `release` route: the owner record goes once the origin answered 2xx. */
export interface Removal {
  readonly tenant: string;
  readonly org: OrgQuotaRef | null;
  readonly rawObject: string;
}

export interface QuotaOptions {
  readonly reservationTtlS: number;
  readonly auditWindowS: number;
}

function namespaces(x: Exchange): QuotaNamespaces {
  return { tenant: x.env.TENANT_QUOTA, org: x.env.ORG_QUOTA };
}

/** The object name as the route captured it (still percent-encoded). */
function rawObjectName(x: Exchange): string {
  return x.route?.params.object ?? x.path;
}

/** Writes a quota audit event the objects handed out, in the background. */
function recordQuotaAudit(x: Exchange, audit: AuditDue | null): void {
  if (audit === null) return;
  // The quota objects hand out one event per quota and audit window: the alert follows it.
  alertAbout(
    x,
    {
      type: audit.kind === "quota_hard_exceeded" ? "quota.hard_exceeded" : "quota.soft_exceeded",
      tenant: audit.tenant,
      ...(audit.org === undefined ? {} : { org: audit.org }),
      data: { quota_kind: audit.quotaKind, usage: audit.usage, limit: audit.limit, ...(audit.requested === undefined ? {} : { requested: audit.requested }) },
    },
    Date.now(),
    false,
  );
  const env = x.env;
  keepAlive(
    x.ctx,
    insertAuditEvent(database(env.DB), {
      atMs: Date.now(),
      kind: audit.kind,
      actor: "quota",
      tenant: audit.tenant,
      subject: null,
      detail: { quota_kind: audit.quotaKind, usage: audit.usage, limit: audit.limit, ...(audit.requested === undefined ? {} : { requested: audit.requested }), ...(audit.org === undefined ? {} : { org: audit.org }) },
    })
      .run()
      .catch((err: unknown) => log.error("audit_write_failed", { error: errorName(err) })),
  );
}

function unavailable(x: Exchange): Response | null {
  return x.refuse(
    "quota_unavailable",
    problem("quota_unavailable", {
      detail: "The storage quota could not be checked; nothing was stored.",
      headers: { "retry-after": String(QUOTA_UNAVAILABLE_RETRY_AFTER_S) },
    }),
  );
}

function invalidName(x: Exchange, reason: string): Response | null {
  return x.refuse("invalid_request", problem("invalid_request", { detail: `object: ${reason}`, extras: { field: "object" } }));
}

async function reserve(x: Exchange, options: QuotaOptions, bytes: number): Promise<Response | null> {
  const tenant = x.tenant!;
  const outcome = await reserveUpload(namespaces(x), {
    tenant: tenant.slug,
    quota: tenant.quota ?? {},
    org: tenant.org,
    rawObject: rawObjectName(x),
    bytes,
    // The runtime's clock: it sets the reservation's expiry (nowMs + reservation_ttl_s).
    nowMs: x.runtime.now(),
    ttlS: options.reservationTtlS,
    auditWindowS: options.auditWindowS,
    // Shadow mode forwards the upload whatever the answer, so it is counted whatever the answer.
    force: x.config.mode === "shadow",
  });
  switch (outcome.kind) {
    case "reserved":
      x.upload = outcome.ticket;
      // Set only in shadow mode, where the refusal is recorded and the upload goes on.
      return outcome.exceeded === undefined ? null : exceeded(x, outcome.exceeded);
    case "invalid":
      return invalidName(x, outcome.reason);
    case "unavailable":
      log.error("quota_reserve_failed", { scope: outcome.scope });
      if (outcome.ticket !== undefined) x.upload = outcome.ticket;
      return unavailable(x);
    case "exceeded":
      return exceeded(x, outcome);
  }
}

function exceeded(x: Exchange, outcome: UploadExceeded): Response | null {
  recordQuotaAudit(x, outcome.audit);
  const whose = outcome.scope === "org" ? `org ${outcome.org}'s` : "tenant's";
  const unit = outcome.quotaKind === "bytes" ? "bytes" : "object";
  return x.refuse(
    "quota_exceeded",
    problem("quota_exceeded", {
      detail: `This upload of ${outcome.requested} ${unit} would pass the ${whose} hard ${outcome.quotaKind} quota of ${outcome.quota} (in use: ${outcome.usage}).`,
      extras: { kind: outcome.quotaKind, quota: outcome.quota, usage: outcome.usage, requested: outcome.requested, org: outcome.scope === "org" ? outcome.org : undefined },
    }),
  );
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
      return reserve(x, options, bytes);
    }
    if (tenant === null) return null;
    const rawObject = rawObjectName(x);
    // A name the store cannot hold is a client error, also on a delete: refused before the origin deletes anything.
    const reason = objectNameError(rawObject);
    if (reason !== null) return invalidName(x, reason);
    x.removal = { tenant: tenant.slug, org: tenant.org, rawObject };
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
export async function settleQuota(x: Exchange, ok: boolean): Promise<QuotaSettled | null> {
  const upload = x.upload;
  if (upload !== null) {
    const settled = await settleUpload(namespaces(x), upload, { ok, nowMs: Date.now() });
    if (settled.kind === "unavailable") {
      log.error(ok ? "quota_commit_failed" : "quota_release_failed", { tenant_has_org: upload.org !== null });
      return null;
    }
    for (const audit of settled.audits) recordQuotaAudit(x, audit);
    return { tenant: upload.tenant, deltaBytes: settled.deltaBytes, warnings: settled.warnings };
  }
  const removal = x.removal;
  if (removal !== null && ok) {
    const removed = await removeObject(namespaces(x), { tenant: removal.tenant, org: removal.org, rawObject: removal.rawObject, nowMs: Date.now() });
    // The origin deleted the object; if the object did not answer, the bytes stay counted until a reindex.
    if (removed.kind === "unavailable" || removed.kind === "invalid") log.error("quota_remove_failed", { kind: removed.kind });
    else return { tenant: removal.tenant, deltaBytes: removed.deltaBytes, warnings: [] };
  }
  return null;
}

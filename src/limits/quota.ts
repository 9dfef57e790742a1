// DESIGN §3 step 8 and §5 at the edge. For a `store` route: Content-Length is
// required (411), the tenant's Durable Object reserves room before the body is
// read (403 quota_exceeded when it would pass a hard quota, nothing
// forwarded), the request is forwarded, and the reservation is committed after
// an origin 2xx or released otherwise. For a `release` route: after an origin
// 2xx the owner record is removed. One Durable Object call before and one
// after an upload; none for any other request. The object unreachable → 503
// quota_unavailable (fail closed) on store routes only.
//
// Anonymous callers have no tenant and so no quota: their store routes still
// need Content-Length, and are otherwise forwarded as they are.
import type { Context, MiddlewareHandler } from "hono";
import type { Caller, GatewayEnv } from "../context";
import type { AuditDue, QuotaLimits, QuotaWarning, ReserveResult, SettleResult } from "../durable/quota-types";
import { usageMeter } from "../db/usage-meter";
import { problem } from "../errors";
import { auditInBackground } from "./background";
import { refuse } from "./refuse";
import { declaredLength } from "../proxy/content-length";

/** Seconds a client is told to wait when the quota object cannot answer. */
export const QUOTA_UNAVAILABLE_RETRY_AFTER_S = 1;
const NO_QUOTA: QuotaLimits = {};

type Ctx = Context<GatewayEnv>;
type KeyCaller = Extract<Caller, { kind: "key" }>;

function quotaStub(c: Ctx, tenant: string) {
  return c.env.TENANT_QUOTA.get(c.env.TENANT_QUOTA.idFromName(tenant));
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
function objectName(c: Ctx): string {
  return c.get("route")?.params.object ?? c.req.path;
}

export function warningHeader(warnings: readonly QuotaWarning[]): string | null {
  if (warnings.length === 0) return null;
  return warnings.map((w) => `${w.kind} ${w.usage}/${w.limit}`).join(", ");
}

function recordQuotaAudit(c: Ctx, audit: AuditDue | null): void {
  if (audit === null) return;
  auditInBackground(c, {
    atMs: Date.now(),
    kind: audit.kind,
    actor: "quota",
    tenant: audit.tenant,
    subject: null,
    detail: { quota_kind: audit.quotaKind, usage: audit.usage, limit: audit.limit, ...(audit.requested === undefined ? {} : { requested: audit.requested }) },
  });
}

function logQuotaFailure(event: string, err: unknown): void {
  console.error(JSON.stringify({ level: "error", at_unix_ms: Date.now(), event, error: err instanceof Error ? err.name : "unknown" }));
}

function unavailable(c: Ctx): Response | null {
  return refuse(
    c,
    "quota_unavailable",
    problem("quota_unavailable", {
      detail: "The tenant's storage quota could not be checked; nothing was stored.",
      headers: { "retry-after": String(QUOTA_UNAVAILABLE_RETRY_AFTER_S) },
    }),
  );
}

async function store(c: Ctx, next: () => Promise<void>, caller: KeyCaller, bytes: number): Promise<Response | void> {
  const config = c.get("config");
  const quota = caller.quota ?? NO_QUOTA;
  const stub = quotaStub(c, caller.tenant);
  const reservationId = crypto.randomUUID();
  let reserved: ReserveResult;
  try {
    // The RPC stub's types turn a union result into a union of promises; the
    // value is the plain ReserveResult.
    reserved = await callQuota(async (): Promise<ReserveResult> =>
      stub.reserve({
        tenant: caller.tenant,
        object: objectName(c),
        bytes,
        quota,
        reservationId,
        nowMs: Date.now(),
        ttlS: config.reservationTtlS,
        auditWindowS: config.auditWindowMs / 1000,
      }),
    );
  } catch (err) {
    logQuotaFailure("quota_reserve_failed", err);
    const refused = unavailable(c);
    if (refused !== null) return refused;
    return next();
  }
  if (reserved.status === "exceeded") {
    recordQuotaAudit(c, reserved.audit);
    const refused = refuse(
      c,
      "quota_exceeded",
      problem("quota_exceeded", {
        detail: `This upload of ${reserved.requested} ${reserved.kind === "bytes" ? "bytes" : "object"} would pass the tenant's hard ${reserved.kind} quota of ${reserved.quota} (in use: ${reserved.usage}).`,
        extras: { kind: reserved.kind, quota: reserved.quota, usage: reserved.usage, requested: reserved.requested },
      }),
    );
    if (refused !== null) return refused;
    return next();
  }
  if (reserved.status === "dedup") return next();

  let settled: SettleResult | null = null;
  try {
    await next();
  } finally {
    const ok = c.res.status >= 200 && c.res.status < 300 && c.error === undefined;
    const nowMs = Date.now();
    try {
      settled = ok
        ? await callQuota(() => stub.commit({ reservationId, nowMs, quota, auditWindowS: config.auditWindowMs / 1000 }))
        : await callQuota(() => stub.release({ reservationId, nowMs }));
    } catch (err) {
      // The origin has answered; the client gets that answer. An unsettled
      // reservation expires after reservation_ttl_s (docs/quotas.md).
      logQuotaFailure(ok ? "quota_commit_failed" : "quota_release_failed", err);
    }
  }
  if (settled !== null) {
    recordQuotaAudit(c, settled.audit);
    if (settled.deltaBytes !== 0) usageMeter.add(caller.tenant, "bytes_stored", settled.deltaBytes, Date.now(), config.usageMaxPending);
    const warning = warningHeader(settled.warnings);
    if (warning !== null) c.res.headers.set("tollgate-quota-warning", warning);
  }
}

async function release(c: Ctx, next: () => Promise<void>, caller: KeyCaller): Promise<void> {
  await next();
  if (c.res.status < 200 || c.res.status >= 300) return;
  try {
    const removed = await callQuota(() => quotaStub(c, caller.tenant).remove({ object: objectName(c), ref: crypto.randomUUID(), nowMs: Date.now() }));
    if (removed.deltaBytes !== 0) usageMeter.add(caller.tenant, "bytes_stored", removed.deltaBytes, Date.now(), c.get("config").usageMaxPending);
  } catch (err) {
    // The origin deleted the object; the bytes stay counted until a reindex.
    logQuotaFailure("quota_remove_failed", err);
  }
}

export function quotaCheck(): MiddlewareHandler<GatewayEnv> {
  return async function quotaCheck(c, next) {
    const action = c.get("route")?.quota ?? null;
    if (action === null) return next();
    const caller = c.get("caller");
    if (action === "store") {
      const bytes = declaredLength(c.req.raw.headers);
      if (bytes === null) {
        const refused = refuse(c, "length_required", problem("length_required", { detail: "Uploads on this route must declare their size in Content-Length." }));
        if (refused !== null) return refused;
        return next();
      }
      if (caller.kind !== "key") return next();
      return store(c, next, caller, bytes);
    }
    if (caller.kind !== "key") return next();
    return release(c, next, caller);
  };
}

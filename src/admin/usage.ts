// A tenant's usage: quota figures live in its TenantQuota Durable Object (one
// per tenant, exact and global), requests this month in usage_monthly (the
// flushed usage tracker, so up to usage.flush_interval_s behind). Also
// /reindex, which has the object recount its counters from its owner records.
import type { Hono } from "hono";
import type { Bindings } from "../exchange";
import type { UsageResult } from "../durable/quota-types";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import { getTenant } from "../db/tenants";
import { monthlyUsage, periodOf } from "../db/usage-monthly";
import { problem } from "../errors";
import { errorName, log } from "../log/logger";
import type { AdminEnv } from "./admin-env";
import { tenantNotFound } from "./not-found";
import { tenantSlugSchema } from "./schemas";
import { stored } from "./storage";
import { pathParam } from "./validate";

/** Seconds a client should wait after the quota object failed to answer. */
const QUOTA_RETRY_AFTER_S = 1;

export function quotaStub(env: Bindings, tenant: string) {
  return env.TENANT_QUOTA.get(env.TENANT_QUOTA.idFromName(tenant));
}

/** The tenant's live quota usage, or null when its Durable Object does not answer. */
export async function liveQuotaUsage(env: Bindings, tenant: string): Promise<UsageResult | null> {
  try {
    return await quotaStub(env, tenant).usage();
  } catch (error) {
    log.error("quota_usage_failed", { error: errorName(error) });
    return null;
  }
}

/** Quota objects asked at once when many tenants are read (orgs, reconcile). */
const USAGE_FAN_OUT = 50;

/** liveQuotaUsage of each tenant, in order, USAGE_FAN_OUT calls at a time. */
export async function liveQuotaUsages(env: Bindings, tenants: readonly string[]): Promise<(UsageResult | null)[]> {
  const usages: (UsageResult | null)[] = [];
  for (let i = 0; i < tenants.length; i += USAGE_FAN_OUT) {
    usages.push(...(await Promise.all(tenants.slice(i, i + USAGE_FAN_OUT).map((t) => liveQuotaUsage(env, t)))));
  }
  return usages;
}

/** 503 quota_unavailable with Retry-After: a quota object did not answer. */
export function quotaUnavailable(detail = "The tenant's quota counters could not be read."): Response {
  return problem("quota_unavailable", { detail, headers: { "retry-after": String(QUOTA_RETRY_AFTER_S) } });
}

export function registerUsageRoutes(app: Hono<AdminEnv>): void {
  app.get("/tenants/:tenant/usage", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const db = database(c.env.DB);
    const row = await stored(() => getTenant(db, slug.value));
    if (row === null) return tenantNotFound(slug.value);
    const usage = await liveQuotaUsage(c.env, slug.value);
    if (usage === null) return quotaUnavailable();
    const requests = await stored(() => monthlyUsage(db, slug.value, periodOf(Date.now()), "requests"));
    let quota: unknown = {};
    try {
      quota = JSON.parse(row.quota);
    } catch {
      quota = {};
    }
    return c.json({ bytes: usage.bytes, objects: usage.objects, reserved_bytes: usage.reserved_bytes, quota, requests_this_month: requests });
  });

  app.post("/tenants/:tenant/reindex", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const db = database(c.env.DB);
    const row = await stored(() => getTenant(db, slug.value));
    if (row === null) return tenantNotFound(slug.value);
    let result;
    try {
      result = await quotaStub(c.env, slug.value).reindex();
    } catch (error) {
      log.error("quota_reindex_failed", { error: errorName(error) });
      return quotaUnavailable();
    }
    const reindexed = { before: result.before, after: result.after, drift: result.drift };
    // The recount lives in the Durable Object, not D1, so its audit event is a
    // separate write; a recount is safe to repeat if that write fails.
    await stored(() => insertAuditEvent(db, { atMs: Date.now(), kind: "tenant_reindexed", actor: "admin", tenant: slug.value, subject: null, detail: reindexed }).run());
    return c.json({ tenant: slug.value, ...reindexed });
  });
}

// Tenants: GET (paged list), PUT (create or replace), GET one (with live quota
// usage), PUT /limits, DELETE (its keys and their overrides go with it, and
// its quota object is emptied). Every D1 write is one batch with its audit
// event, then clears this isolate's cached keys of the tenant; other
// isolates see the change within cache_ttl_s. A change of org calls
// syncOrgMembership first (org-sync.ts).
import type { Hono } from "hono";
import { insertAuditEvent } from "../db/audit";
import { database, type Db } from "../db/client";
import { countKeysOfTenant, deleteKeysOfTenant } from "../db/keys";
import { getOrg } from "../db/orgs";
import { deleteKeyOverridesOfTenant } from "../db/overrides";
import { deleteTenant, getTenant, listTenants, putTenant, type TenantRow, updateTenant } from "../db/tenants";
import type { Bindings } from "../exchange";
import { errorName, log } from "../log/logger";
import type { AdminEnv } from "./admin-env";
import { purgeBudgets } from "./budget-reads";
import { tenantNotFound } from "./not-found";
import { slugPageQuerySchema } from "./operation-schemas";
import { syncOrgMembership } from "./org-sync";
import { pageOf, rowsToRead } from "./paging";
import { presentTenant } from "./present";
import { purgeTenantQuota } from "./quota-purge";
import { unknownLimitCategory } from "./categories";
import { tenantBodySchema, tenantSlugSchema } from "./schemas";
import { stored } from "./storage";
import { liveQuotaUsage, quotaUnavailable } from "./usage";
import { invalid, jsonBody, pathParam, validate } from "./validate";

/** 400 naming `org` unless the org exists (or is null: no org). */
async function checkOrgExists(db: Db, org: string | null | undefined): Promise<Response | null> {
  if (org == null) return null;
  if ((await stored(() => getOrg(db, org))) !== null) return null;
  return invalid("org", `no org named ${org}; create it with PUT /orgs/${org}`);
}

/** Tells the org quota objects about a change of org; a failure is a 503 with nothing changed in D1. */
async function moveBetweenOrgs(env: Bindings, tenant: string, fromOrg: string | null, toOrg: string | null): Promise<Response | null> {
  if (fromOrg === toOrg) return null;
  try {
    await syncOrgMembership(env, tenant, fromOrg, toOrg);
    return null;
  } catch (error) {
    log.error("org_sync_failed", { error: errorName(error) });
    return quotaUnavailable("The org's quota counters could not be updated; nothing was changed.");
  }
}

export function registerTenantRoutes(app: Hono<AdminEnv>): void {
  app.get("/tenants", async (c) => {
    const query = validate(slugPageQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const rows = await stored(() => listTenants(database(c.env.DB), { afterSlug: query.value.cursor, limit: rowsToRead(query.value.limit) }));
    const page = pageOf(rows, query.value.limit, (r) => r.slug);
    return c.json({ tenants: page.items.map(presentTenant), next_cursor: page.nextCursor });
  });

  app.put("/tenants/:tenant", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const body = await jsonBody(c, tenantBodySchema);
    if (!body.ok) return body.response;
    const unknown = unknownLimitCategory(body.value.limits, "limits", c.get("config"));
    if (unknown !== null) return unknown;
    const db = database(c.env.DB);
    const nowMs = Date.now();
    const missingOrg = await checkOrgExists(db, body.value.org);
    if (missingOrg !== null) return missingOrg;
    const existing = await stored(() => getTenant(db, slug.value));
    const limits = body.value.limits ?? {};
    const quota = body.value.quota ?? {};
    const org = body.value.org ?? null;
    const row: TenantRow = {
      slug: slug.value,
      limits: JSON.stringify(limits),
      quota: JSON.stringify(quota),
      org,
      createdAt: existing?.createdAt ?? nowMs,
      updatedAt: nowMs,
    };
    const syncFailed = await moveBetweenOrgs(c.env, slug.value, existing?.org ?? null, org);
    if (syncFailed !== null) return syncFailed;
    await stored(() =>
      db.batch([
        putTenant(db, row),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: existing === null ? "tenant_created" : "tenant_replaced",
          actor: "admin",
          tenant: slug.value,
          subject: null,
          detail: existing === null ? { limits, quota, org } : { limits, quota, org, previous: presentTenant(existing) },
        }),
      ]),
    );
    c.get("runtime").keys.clearTenant(slug.value);
    c.get("runtime").tenants.clear(slug.value);
    return c.json(presentTenant(row), existing === null ? 201 : 200);
  });

  app.get("/tenants/:tenant", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const row = await stored(() => getTenant(database(c.env.DB), slug.value));
    if (row === null) return tenantNotFound(slug.value);
    const usage = await liveQuotaUsage(c.env, slug.value);
    return c.json({ ...presentTenant(row), usage: usage === null ? null : { bytes: usage.bytes, objects: usage.objects, reserved_bytes: usage.reserved_bytes } });
  });

  app.put("/tenants/:tenant/limits", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const body = await jsonBody(c, tenantBodySchema);
    if (!body.ok) return body.response;
    const unknown = unknownLimitCategory(body.value.limits, "limits", c.get("config"));
    if (unknown !== null) return unknown;
    const db = database(c.env.DB);
    const nowMs = Date.now();
    const existing = await stored(() => getTenant(db, slug.value));
    if (existing === null) return tenantNotFound(slug.value);
    const missingOrg = await checkOrgExists(db, body.value.org);
    if (missingOrg !== null) return missingOrg;
    // Fields left out keep their value; send {} to clear limits or quota, null to leave the org.
    const fields: { limits?: string; quota?: string; org?: string | null; updatedAt: number } = { updatedAt: nowMs };
    const detail: Record<string, unknown> = {};
    if (body.value.limits !== undefined) {
      fields.limits = JSON.stringify(body.value.limits);
      detail.limits = body.value.limits;
    }
    if (body.value.quota !== undefined) {
      fields.quota = JSON.stringify(body.value.quota);
      detail.quota = body.value.quota;
    }
    if (body.value.org !== undefined) {
      fields.org = body.value.org;
      detail.org = body.value.org;
    }
    detail.previous = presentTenant(existing);
    const syncFailed = await moveBetweenOrgs(c.env, slug.value, existing.org, fields.org === undefined ? existing.org : fields.org);
    if (syncFailed !== null) return syncFailed;
    await stored(() =>
      db.batch([
        updateTenant(db, slug.value, fields),
        insertAuditEvent(db, { atMs: nowMs, kind: "tenant_limits_set", actor: "admin", tenant: slug.value, subject: null, detail }),
      ]),
    );
    c.get("runtime").keys.clearTenant(slug.value);
    c.get("runtime").tenants.clear(slug.value);
    const row: TenantRow = {
      ...existing,
      limits: fields.limits ?? existing.limits,
      quota: fields.quota ?? existing.quota,
      org: fields.org === undefined ? existing.org : fields.org,
      updatedAt: nowMs,
    };
    return c.json(presentTenant(row));
  });

  app.delete("/tenants/:tenant", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const db = database(c.env.DB);
    const existing = await stored(() => getTenant(db, slug.value));
    if (existing === null) return tenantNotFound(slug.value);
    const keysDeleted = await stored(() => countKeysOfTenant(db, slug.value));
    // The quota side first: if it fails, the tenant is still whole and the same call can be retried.
    const syncFailed = await moveBetweenOrgs(c.env, slug.value, existing.org, null);
    if (syncFailed !== null) return syncFailed;
    const purge = await purgeTenantQuota(c.env, slug.value);
    if (!purge.ok) return quotaUnavailable("The tenant's quota object could not be emptied; nothing was deleted. Retry the delete.");
    await purgeBudgets(c.env, { tenant: slug.value, owner: null });
    const nowMs = Date.now();
    await stored(() =>
      db.batch([
        deleteKeyOverridesOfTenant(db, slug.value),
        deleteKeysOfTenant(db, slug.value),
        deleteTenant(db, slug.value),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: "tenant_deleted",
          actor: "admin",
          tenant: slug.value,
          subject: null,
          detail: { keys_deleted: keysDeleted, purged: purge.purged, previous: presentTenant(existing) },
        }),
      ]),
    );
    c.get("runtime").keys.clearTenant(slug.value);
    c.get("runtime").tenants.clear(slug.value);
    c.get("runtime").policy.clear();
    return c.json({ tenant: slug.value, deleted: true, keys_deleted: keysDeleted });
  });
}

// Tenants: PUT (create or replace), GET (with live quota usage), PUT /limits,
// DELETE (its keys and their overrides go with it). Every write is one D1
// batch with its audit event, then clears this isolate's cached keys of the
// tenant; other isolates see the change within cache_ttl_s.
import type { Hono } from "hono";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import { deleteKeysOfTenant, countKeysOfTenant } from "../db/keys";
import { deleteKeyOverridesOfTenant } from "../db/overrides";
import { deleteTenant, getTenant, putTenant, type TenantRow, updateTenant } from "../db/tenants";
import type { AdminEnv } from "./admin-env";
import { tenantNotFound } from "./not-found";
import { presentTenant } from "./present";
import { tenantBodySchema, tenantSlugSchema } from "./schemas";
import { stored } from "./storage";
import { liveQuotaUsage } from "./usage";
import { jsonBody, pathParam } from "./validate";

export function registerTenantRoutes(app: Hono<AdminEnv>): void {
  app.put("/tenants/:tenant", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const body = await jsonBody(c, tenantBodySchema);
    if (!body.ok) return body.response;
    const db = database(c.env.DB);
    const nowMs = Date.now();
    const existing = await stored(() => getTenant(db, slug.value));
    const limits = body.value.limits ?? {};
    const quota = body.value.quota ?? {};
    const row: TenantRow = {
      slug: slug.value,
      limits: JSON.stringify(limits),
      quota: JSON.stringify(quota),
      createdAt: existing?.createdAt ?? nowMs,
      updatedAt: nowMs,
    };
    await stored(() =>
      db.batch([
        putTenant(db, row),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: existing === null ? "tenant_created" : "tenant_replaced",
          actor: "admin",
          tenant: slug.value,
          subject: null,
          detail: existing === null ? { limits, quota } : { limits, quota, previous: presentTenant(existing) },
        }),
      ]),
    );
    c.get("runtime").keys.clearTenant(slug.value);
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
    const db = database(c.env.DB);
    const nowMs = Date.now();
    const existing = await stored(() => getTenant(db, slug.value));
    if (existing === null) return tenantNotFound(slug.value);
    // Fields left out keep their value; send {} to clear one.
    const fields: { limits?: string; quota?: string; updatedAt: number } = { updatedAt: nowMs };
    if (body.value.limits !== undefined) fields.limits = JSON.stringify(body.value.limits);
    if (body.value.quota !== undefined) fields.quota = JSON.stringify(body.value.quota);
    const detail: Record<string, unknown> = {};
    if (body.value.limits !== undefined) detail.limits = body.value.limits;
    if (body.value.quota !== undefined) detail.quota = body.value.quota;
    detail.previous = presentTenant(existing);
    await stored(() =>
      db.batch([
        updateTenant(db, slug.value, fields),
        insertAuditEvent(db, { atMs: nowMs, kind: "tenant_limits_set", actor: "admin", tenant: slug.value, subject: null, detail }),
      ]),
    );
    c.get("runtime").keys.clearTenant(slug.value);
    const row: TenantRow = { ...existing, limits: fields.limits ?? existing.limits, quota: fields.quota ?? existing.quota, updatedAt: nowMs };
    return c.json(presentTenant(row));
  });

  app.delete("/tenants/:tenant", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const db = database(c.env.DB);
    const nowMs = Date.now();
    const existing = await stored(() => getTenant(db, slug.value));
    if (existing === null) return tenantNotFound(slug.value);
    const keysDeleted = await stored(() => countKeysOfTenant(db, slug.value));
    await stored(() =>
      db.batch([
        deleteKeyOverridesOfTenant(db, slug.value),
        deleteKeysOfTenant(db, slug.value),
        deleteTenant(db, slug.value),
        insertAuditEvent(db, { atMs: nowMs, kind: "tenant_deleted", actor: "admin", tenant: slug.value, subject: null, detail: { keys_deleted: keysDeleted, previous: presentTenant(existing) } }),
      ]),
    );
    c.get("runtime").keys.clearTenant(slug.value);
    c.get("runtime").policy.clear();
    return c.json({ tenant: slug.value, deleted: true, keys_deleted: keysDeleted });
  });
}

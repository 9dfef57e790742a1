// Orgs: a group of tenants with a quota over all of them. PUT
// creates or replaces one, GET reads it with its tenants and their usage
// summed, DELETE is refused (409 conflict) while a tenant names it and
// empties the org's quota object. A tenant joins or leaves an org through
// its own PUT (`org`).
import type { Hono } from "hono";
import { insertAuditEvent, insertAuditEventWhere } from "../db/audit";
import { database } from "../db/client";
import { countTenantsOfOrg, deleteOrgIfEmpty, getOrg, listOrgs, type OrgRow, orgIsGone, putOrg, tenantsOfOrg } from "../db/orgs";
import { problem } from "../errors";
import type { AdminEnv } from "./admin-env";
import { purgeBudgets } from "./budget-reads";
import { orgNotFound } from "./not-found";
import { orgBodySchema, slugPageQuerySchema } from "./operation-schemas";
import { pageOf, rowsToRead } from "./paging";
import { presentOrg } from "./present";
import { tenantSlugSchema } from "./schemas";
import { stored } from "./storage";
import { purgeOrgQuota } from "./org-sync";
import { liveQuotaUsages, quotaUnavailable } from "./usage";
import { jsonBody, pathParam, validate } from "./validate";

/**
 * Tenants whose quota objects GET /orgs/{org} reads, at most: each is one
 * Durable Object call. An org with more lists the first ones and answers
 * `usage: null`.
 */
export const MAX_ORG_TENANTS_READ = 500;

function subjectOf(slug: string): string {
  return `org:${slug}`;
}

interface UsageTotals {
  bytes: number;
  objects: number;
  reserved_bytes: number;
}

/** The usage of every tenant summed, or null when one quota object does not answer (a partial sum would mislead). */
async function summedUsage(env: AdminEnv["Bindings"], tenants: readonly string[]): Promise<UsageTotals | null> {
  const total: UsageTotals = { bytes: 0, objects: 0, reserved_bytes: 0 };
  for (const usage of await liveQuotaUsages(env, tenants)) {
    if (usage === null) return null;
    total.bytes += usage.bytes;
    total.objects += usage.objects;
    total.reserved_bytes += usage.reserved_bytes;
  }
  return total;
}

export function registerOrgRoutes(app: Hono<AdminEnv>): void {
  app.get("/orgs", async (c) => {
    const query = validate(slugPageQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const rows = await stored(() => listOrgs(database(c.env.DB), { afterSlug: query.value.cursor, limit: rowsToRead(query.value.limit) }));
    const page = pageOf(rows, query.value.limit, (r) => r.slug);
    return c.json({ orgs: page.items.map((r) => ({ ...presentOrg(r), tenant_count: r.tenantCount })), next_cursor: page.nextCursor });
  });

  app.put("/orgs/:org", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("org"), "org");
    if (!slug.ok) return slug.response;
    const body = await jsonBody(c, orgBodySchema);
    if (!body.ok) return body.response;
    const db = database(c.env.DB);
    const nowMs = Date.now();
    const existing = await stored(() => getOrg(db, slug.value));
    const quota = body.value.quota ?? {};
    const row: OrgRow = { slug: slug.value, quota: JSON.stringify(quota), createdAt: existing?.createdAt ?? nowMs, updatedAt: nowMs };
    await stored(() =>
      db.batch([
        putOrg(db, row),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: existing === null ? "org_created" : "org_replaced",
          actor: "admin",
          tenant: null,
          subject: subjectOf(slug.value),
          detail: existing === null ? { quota } : { quota, previous: presentOrg(existing) },
        }),
      ]),
    );
    return c.json(presentOrg(row), existing === null ? 201 : 200);
  });

  app.get("/orgs/:org", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("org"), "org");
    if (!slug.ok) return slug.response;
    const db = database(c.env.DB);
    const row = await stored(() => getOrg(db, slug.value));
    if (row === null) return orgNotFound(slug.value);
    // One more than the cap tells a complete list from a cut one.
    const tenants = await stored(() => tenantsOfOrg(db, slug.value, MAX_ORG_TENANTS_READ + 1));
    const complete = tenants.length <= MAX_ORG_TENANTS_READ;
    const listed = tenants.slice(0, MAX_ORG_TENANTS_READ);
    const usage = complete ? await summedUsage(c.env, listed) : null;
    const tenantCount = complete ? listed.length : await stored(() => countTenantsOfOrg(db, slug.value));
    return c.json({ ...presentOrg(row), tenant_count: tenantCount, tenants: listed, usage });
  });

  app.delete("/orgs/:org", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("org"), "org");
    if (!slug.ok) return slug.response;
    const db = database(c.env.DB);
    const existing = await stored(() => getOrg(db, slug.value));
    if (existing === null) return orgNotFound(slug.value);
    const refuse = (tenants: number) =>
      problem("conflict", {
        detail: `The org ${slug.value} still has ${tenants} tenant(s); move them out (PUT /tenants/{tenant}/limits with "org": null) or delete them first.`,
        extras: { tenants },
      });
    const members = await stored(() => countTenantsOfOrg(db, slug.value));
    if (members > 0) return refuse(members);
    // Emptied first, as for a tenant: a failure leaves the org in D1 and the delete can be retried.
    try {
      await purgeOrgQuota(c.env, slug.value);
    } catch {
      return quotaUnavailable("The org's quota object could not be emptied; nothing was deleted. Retry the delete.");
    }
    await purgeBudgets(c.env, { org: slug.value });
    const nowMs = Date.now();
    // The delete only happens if no tenant joined since the count; its audit event only if it happened.
    const [deleted] = await stored(() =>
      db.batch([
        deleteOrgIfEmpty(db, slug.value),
        insertAuditEventWhere(db, { atMs: nowMs, kind: "org_deleted", actor: "admin", tenant: null, subject: subjectOf(slug.value), detail: { previous: presentOrg(existing) } }, orgIsGone(slug.value)),
      ]),
    );
    if (deleted.meta.changes === 0) {
      // A tenant joined since the count, or another call deleted the org first.
      const now = await stored(() => countTenantsOfOrg(db, slug.value));
      return now > 0 ? refuse(now) : orgNotFound(slug.value);
    }
    return c.json({ org: slug.value, deleted: true });
  });
}

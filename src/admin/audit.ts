// The audit log, newest first, a page at a time: `next_cursor` (the last
// event's id) asks for the page after. Filters: kind, tenant, since (ISO 8601).
import type { Hono } from "hono";
import { listAuditEvents } from "../db/audit";
import { database } from "../db/client";
import type { AdminEnv } from "./admin-env";
import { presentAuditEvent } from "./present";
import { auditQuerySchema, DEFAULT_AUDIT_PAGE } from "./schemas";
import { stored } from "./storage";
import { validate } from "./validate";

export function registerAuditRoutes(app: Hono<AdminEnv>): void {
  app.get("/audit", async (c) => {
    const query = validate(auditQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const q = query.value;
    const limit = q.limit ?? DEFAULT_AUDIT_PAGE;
    // One more than a page tells whether another page follows.
    const rows = await stored(() =>
      listAuditEvents(database(c.env.DB), {
        kind: q.kind,
        tenant: q.tenant,
        sinceMs: q.since === undefined ? undefined : Date.parse(q.since),
        beforeId: q.cursor === undefined ? undefined : Number(q.cursor),
        limit: limit + 1,
      }),
    );
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return c.json({ events: page.map(presentAuditEvent), next_cursor: rows.length > limit && last !== undefined ? String(last.id) : null });
  });
}

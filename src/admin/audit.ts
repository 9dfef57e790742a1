// The audit log, newest first, a page at a time: `next_cursor` (the last
// event's id) asks for the page after. Filters: kind, tenant, since (ISO
// 8601), and caller: a caller key or block target (`ip:…`, `net:…`, `jwt:…`,
// `key:…`, `tenant:…`), matched against the subject it is stored as — for
// addresses, networks and JWT callers a keyed digest that only this
// deployment can compute.
import type { Hono } from "hono";
import { listAuditEvents } from "../db/audit";
import { database } from "../db/client";
import type { AdminEnv } from "./admin-env";
import { readAuditSubject } from "./audit-subject-key";
import { parseCallerKey } from "./caller-keys";
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
    const db = database(c.env.DB);
    let subjects: string[] | undefined;
    if (q.caller !== undefined) {
      const caller = parseCallerKey(q.caller, "caller", ["ip", "net", "key", "jwt", "tenant"]);
      if (!caller.ok) return caller.response;
      const digest = await readAuditSubject(c.get("runtime"), db, caller.value, Date.now());
      if (digest === null) return c.json({ events: [], next_cursor: null });
      // Key events (key_minted, key_revoked) name the bare id; overrides and blocks `key:<id>`.
      subjects = caller.value.startsWith("key:") ? [digest, caller.value.slice("key:".length)] : [digest];
    }
    // One more than a page tells whether another page follows.
    const rows = await stored(() =>
      listAuditEvents(db, {
        kind: q.kind,
        tenant: q.tenant,
        subjects,
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

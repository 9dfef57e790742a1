// Blocks: callers, tenants and networks the gateway refuses with
// 403 `blocked` before any other check, optionally until `expires_at`. One row
// per canonical target: blocking a target again replaces its expiry and
// reason (200, same id). A write clears this isolate's snapshot at once (the
// gateway reads blocks through the override snapshot); other isolates see it
// within cache_ttl_s.
import type { Hono } from "hono";
import { insertAuditEvent } from "../db/audit";
import { deleteBlock, getBlock, getBlockByTarget, listBlocks, putBlock } from "../db/blocks";
import { database } from "../db/client";
import type { AdminEnv } from "./admin-env";
import { adminAuditSubject } from "./audit-subject-key";
import { blockNotFound } from "./not-found";
import { parseCallerKey } from "./caller-keys";
import { blockBodySchema, blockIdSchema, idPageQuerySchema } from "./operation-schemas";
import { pageOf, rowsToRead } from "./paging";
import { presentBlock } from "./present";
import { stored } from "./storage";
import { invalid, jsonBody, pathParam, validate } from "./validate";

/** The tenant an event is about, for the audit log's tenant filter. */
function tenantOf(target: string): string | null {
  return target.startsWith("tenant:") ? target.slice("tenant:".length) : null;
}

export function registerBlockRoutes(app: Hono<AdminEnv>): void {
  app.post("/blocks", async (c) => {
    const body = await jsonBody(c, blockBodySchema);
    if (!body.ok) return body.response;
    const target = parseCallerKey(body.value.target, "target", ["ip", "net", "key", "jwt", "tenant"]);
    if (!target.ok) return target.response;
    const nowMs = Date.now();
    const expiresAtMs = body.value.expires_at == null ? null : Date.parse(body.value.expires_at);
    if (expiresAtMs !== null && expiresAtMs <= nowMs) return invalid("expires_at", "must be in the future");
    const db = database(c.env.DB);
    const existing = await stored(() => getBlockByTarget(db, target.value));
    const subject = await adminAuditSubject(c.get("runtime"), db, target.value, nowMs);
    const reason = body.value.reason ?? null;
    const shadow = body.value.shadow ?? false;
    const [written] = await stored(() =>
      db.batch([
        putBlock(db, { target: target.value, expiresAt: expiresAtMs, reason, shadow, createdAt: nowMs, updatedAt: nowMs }),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: existing === null ? "block_created" : "block_replaced",
          actor: "admin",
          tenant: tenantOf(target.value),
          subject,
          // The target as the operator wrote it: their own input, not a caller's request, so the audit may show it (the subject is its digest, for filtering).
          detail: {
            target: target.value,
            expires_at: expiresAtMs === null ? null : new Date(expiresAtMs).toISOString(),
            reason,
            shadow,
            ...(existing === null ? {} : { id: existing.id, previous: { expires_at: presentBlock(existing, nowMs).expires_at, reason: existing.reason, shadow: existing.shadow, penalty: presentBlock(existing, nowMs).penalty } }),
          },
        }),
      ]),
    );
    const row = written[0];
    if (row === undefined) throw new Error("block upsert returned no row");
    c.get("runtime").policy.clear();
    return c.json(presentBlock(row, nowMs), existing === null ? 201 : 200);
  });

  app.get("/blocks", async (c) => {
    const query = validate(idPageQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const rows = await stored(() => listBlocks(database(c.env.DB), { afterId: query.value.cursor, limit: rowsToRead(query.value.limit) }));
    const page = pageOf(rows, query.value.limit, (r) => String(r.id));
    const nowMs = Date.now();
    return c.json({ blocks: page.items.map((r) => presentBlock(r, nowMs)), next_cursor: page.nextCursor });
  });

  app.get("/blocks/:id", async (c) => {
    const id = pathParam(blockIdSchema, c.req.param("id"), "id");
    if (!id.ok) return id.response;
    const row = await stored(() => getBlock(database(c.env.DB), id.value));
    if (row === null) return blockNotFound(id.value);
    return c.json(presentBlock(row, Date.now()));
  });

  app.delete("/blocks/:id", async (c) => {
    const id = pathParam(blockIdSchema, c.req.param("id"), "id");
    if (!id.ok) return id.response;
    const db = database(c.env.DB);
    const existing = await stored(() => getBlock(db, id.value));
    if (existing === null) return blockNotFound(id.value);
    const nowMs = Date.now();
    const subject = await adminAuditSubject(c.get("runtime"), db, existing.target, nowMs);
    const previous = presentBlock(existing, nowMs);
    await stored(() =>
      db.batch([
        deleteBlock(db, id.value),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: "block_deleted",
          actor: "admin",
          tenant: tenantOf(existing.target),
          subject,
          // A penalty's target is a caller the gateway named, not the operator's input: the audit keeps only its digest (the subject).
          detail: { id: existing.id, ...(existing.source === "penalty" ? {} : { target: existing.target }), previous: { expires_at: previous.expires_at, reason: previous.reason, active: previous.active, shadow: previous.shadow, penalty: previous.penalty } },
        }),
      ]),
    );
    const policy = c.get("runtime").policy;
    policy.forgetPenalty(existing.id);
    policy.clear();
    return c.json({ id: existing.id, target: existing.target, deleted: true });
  });
}

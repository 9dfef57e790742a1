// Caller overrides: limits for one caller key, `ip:<address>` (an IPv6
// address means its /64, as the limiter keys it), `key:<id>` or `jwt:<hex>`,
// optionally until `expires_at`. They win over every other source of limits
// while active. A write clears this isolate's snapshot of the table at once;
// other isolates reload theirs within cache_ttl_s.
//
// `tenant:` overrides are refused: an override stands in for one caller's
// limits, and a tenant is not a caller. A tenant's own limits (its `tenant`
// and `key` lists) are set with PUT /tenants/{tenant}/limits; a tenant is
// shut out with a block.
import type { Hono } from "hono";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import { deleteOverride, getOverride, listOverrides, type OverrideRow, putOverride } from "../db/overrides";
import type { AdminEnv } from "./admin-env";
import { adminAuditSubject } from "./audit-subject-key";
import { parseCallerKey } from "./caller-keys";
import { overrideNotFound } from "./not-found";
import { overridePageQuerySchema } from "./operation-schemas";
import { pageOf, rowsToRead } from "./paging";
import { presentOverride } from "./present";
import { unknownLimitCategory } from "./categories";
import { overrideBodySchema } from "./schemas";
import { stored } from "./storage";
import { invalid, jsonBody, type Parsed, validate } from "./validate";

const TENANT_OVERRIDE_REFUSED = "tenant: overrides are not supported: set the tenant's limits with PUT /tenants/{tenant}/limits, or block it with POST /blocks";

/**
 * The caller key as the gateway spells it: `ip:` + the limiter's key for the
 * address (IPv4 dotted quad, IPv6 as its /64 — `ip:2001:db8:1:2::/64`),
 * `key:<id>` or `jwt:<64 hex>` unchanged. An IPv6 address may be given in
 * full or as its /64.
 */
export function normaliseCallerKey(raw: string | undefined): Parsed<string> {
  return parseCallerKey(raw, "caller_key", ["ip", "key", "jwt"], { tenant: TENANT_OVERRIDE_REFUSED });
}

const CALLER_KEY_ROUTE = "/overrides/:caller_key{.+}";

export function registerOverrideRoutes(app: Hono<AdminEnv>): void {
  app.get("/overrides", async (c) => {
    const query = validate(overridePageQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const rows = await stored(() => listOverrides(database(c.env.DB), { afterKey: query.value.cursor, limit: rowsToRead(query.value.limit) }));
    const page = pageOf(rows, query.value.limit, (r) => r.callerKey);
    const nowMs = Date.now();
    return c.json({ overrides: page.items.map((r) => presentOverride(r, nowMs)), next_cursor: page.nextCursor });
  });

  app.get(CALLER_KEY_ROUTE, async (c) => {
    const callerKey = normaliseCallerKey(c.req.param("caller_key"));
    if (!callerKey.ok) return callerKey.response;
    const row = await stored(() => getOverride(database(c.env.DB), callerKey.value));
    if (row === null) return overrideNotFound(callerKey.value);
    return c.json(presentOverride(row, Date.now()));
  });

  app.put(CALLER_KEY_ROUTE, async (c) => {
    const callerKey = normaliseCallerKey(c.req.param("caller_key"));
    if (!callerKey.ok) return callerKey.response;
    const body = await jsonBody(c, overrideBodySchema);
    if (!body.ok) return body.response;
    const unknown = unknownLimitCategory(body.value.limits, "limits", c.get("config"));
    if (unknown !== null) return unknown;
    const nowMs = Date.now();
    const expiresAtMs = body.value.expires_at == null ? null : Date.parse(body.value.expires_at);
    if (expiresAtMs !== null && expiresAtMs <= nowMs) return invalid("expires_at", "must be in the future");
    const db = database(c.env.DB);
    const existing = await stored(() => getOverride(db, callerKey.value));
    const subject = await adminAuditSubject(c.get("runtime"), db, callerKey.value, nowMs);
    // `shadow` on the override sets it on every limit in it (tried beside the limits that apply without it, or switched on).
    const shadow = body.value.shadow;
    const limits = shadow === undefined ? body.value.limits : Object.fromEntries(Object.entries(body.value.limits).map(([category, list]) => [category, list.map((l) => ({ ...l, shadow }))]));
    const row: OverrideRow = { callerKey: callerKey.value, limits: JSON.stringify(limits), updatedAt: nowMs, expiresAt: expiresAtMs, reason: body.value.reason ?? null };
    const presented = presentOverride(row, nowMs);
    const detail: Record<string, unknown> = { limits: presented.limits, shadow: presented.shadow, expires_at: presented.expires_at, reason: presented.reason };
    if (existing !== null) {
      const previous = presentOverride(existing, nowMs);
      detail.previous = { limits: previous.limits, shadow: previous.shadow, expires_at: previous.expires_at, reason: previous.reason };
    }
    await stored(() => db.batch([putOverride(db, row), insertAuditEvent(db, { atMs: nowMs, kind: "override_set", actor: "admin", tenant: null, subject, detail })]));
    c.get("runtime").policy.clear();
    return c.json(presented, existing === null ? 201 : 200);
  });

  app.delete(CALLER_KEY_ROUTE, async (c) => {
    const callerKey = normaliseCallerKey(c.req.param("caller_key"));
    if (!callerKey.ok) return callerKey.response;
    const db = database(c.env.DB);
    const existing = await stored(() => getOverride(db, callerKey.value));
    if (existing === null) return overrideNotFound(callerKey.value);
    const nowMs = Date.now();
    const subject = await adminAuditSubject(c.get("runtime"), db, callerKey.value, nowMs);
    const previous = presentOverride(existing, nowMs);
    await stored(() =>
      db.batch([
        deleteOverride(db, callerKey.value),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: "override_deleted",
          actor: "admin",
          tenant: null,
          subject,
          detail: { previous: { limits: previous.limits, expires_at: previous.expires_at, reason: previous.reason } },
        }),
      ]),
    );
    c.get("runtime").policy.clear();
    return c.json({ caller_key: callerKey.value, deleted: true });
  });
}

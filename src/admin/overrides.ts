// Caller overrides: limits for one caller key, `ip:<address>` (an IPv6
// address means its /64, as the limiter keys it) or `key:<id>`. They win over
// every other source of limits. A write clears this isolate's snapshot of the
// table at once; other isolates reload theirs within cache_ttl_s.
import type { Hono } from "hono";
import { clearOverrideCache } from "../cache/override-cache";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import { deleteOverride, getOverride, type OverrideRow, putOverride } from "../db/overrides";
import { parseIp } from "../engine/cidr";
import { canonicalKey, UNKNOWN_CLIENT } from "../identity/client-address";
import type { AdminEnv } from "./admin-env";
import { overrideNotFound } from "./not-found";
import { presentOverride } from "./present";
import { callerKeySchema, overrideBodySchema } from "./schemas";
import { stored } from "./storage";
import { invalid, jsonBody, type Parsed, pathParam } from "./validate";

/**
 * The caller key as the gateway spells it: `ip:` + the limiter's key for the
 * address (IPv4 dotted quad, IPv6 as its /64 — `ip:2001:db8:1:2::/64`), or
 * `key:<id>` unchanged. An IPv6 address may be given in full or as its /64.
 */
export function normaliseCallerKey(raw: string | undefined): Parsed<string> {
  const checked = pathParam(callerKeySchema, raw, "caller_key");
  if (!checked.ok) return checked;
  const value = checked.value;
  if (value.startsWith("key:") || value === `ip:${UNKNOWN_CLIENT}`) return checked;
  let address = value.slice(3);
  const slash = address.indexOf("/");
  if (slash !== -1) {
    if (address.slice(slash) !== "/64") return { ok: false, response: invalid("caller_key", "an IPv6 network must be a /64") };
    address = address.slice(0, slash);
  }
  const parsed = parseIp(address);
  if (parsed === null) return { ok: false, response: invalid("caller_key", "is not a valid IP address") };
  if (slash !== -1 && parsed.family !== 6) return { ok: false, response: invalid("caller_key", "only an IPv6 address takes a /64") };
  return { ok: true, value: `ip:${canonicalKey(parsed)}` };
}

const CALLER_KEY_ROUTE = "/overrides/:caller_key{.+}";

export function registerOverrideRoutes(app: Hono<AdminEnv>): void {
  app.get(CALLER_KEY_ROUTE, async (c) => {
    const callerKey = normaliseCallerKey(c.req.param("caller_key"));
    if (!callerKey.ok) return callerKey.response;
    const row = await stored(() => getOverride(database(c.env.DB), callerKey.value));
    if (row === null) return overrideNotFound(callerKey.value);
    return c.json(presentOverride(row));
  });

  app.put(CALLER_KEY_ROUTE, async (c) => {
    const callerKey = normaliseCallerKey(c.req.param("caller_key"));
    if (!callerKey.ok) return callerKey.response;
    const body = await jsonBody(c, overrideBodySchema);
    if (!body.ok) return body.response;
    const db = database(c.env.DB);
    const nowMs = Date.now();
    const existing = await stored(() => getOverride(db, callerKey.value));
    const row: OverrideRow = { callerKey: callerKey.value, limits: JSON.stringify(body.value.limits), updatedAt: nowMs };
    await stored(() =>
      db.batch([
        putOverride(db, row),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: "override_set",
          actor: "admin",
          tenant: null,
          subject: callerKey.value,
          detail: existing === null ? { limits: body.value.limits } : { limits: body.value.limits, previous: presentOverride(existing).limits },
        }),
      ]),
    );
    clearOverrideCache();
    return c.json(presentOverride(row), existing === null ? 201 : 200);
  });

  app.delete(CALLER_KEY_ROUTE, async (c) => {
    const callerKey = normaliseCallerKey(c.req.param("caller_key"));
    if (!callerKey.ok) return callerKey.response;
    const db = database(c.env.DB);
    const existing = await stored(() => getOverride(db, callerKey.value));
    if (existing === null) return overrideNotFound(callerKey.value);
    const nowMs = Date.now();
    await stored(() =>
      db.batch([
        deleteOverride(db, callerKey.value),
        insertAuditEvent(db, { atMs: nowMs, kind: "override_deleted", actor: "admin", tenant: null, subject: callerKey.value, detail: { previous: presentOverride(existing).limits } }),
      ]),
    );
    clearOverrideCache();
    return c.json({ caller_key: callerKey.value, deleted: true });
  });
}

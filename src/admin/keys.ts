// Managed keys: mint (the secret is in the answer once and nowhere else),
// list (never a secret or digest), revoke. A revocation clears this isolate's
// cached record at once; other isolates stop admitting the key within
// cache_ttl_s.
import type { Hono } from "hono";
import { insertAuditEvent } from "../db/audit";
import { database } from "../db/client";
import { getKey, insertKey, listKeys, revokeKey } from "../db/keys";
import { getTenant } from "../db/tenants";
import { mintApiKey } from "../identity/api-key";
import type { AdminEnv } from "./admin-env";
import { purgeBudgets } from "./budget-reads";
import { keyNotFound, tenantNotFound } from "./not-found";
import { presentKey } from "./present";
import { unknownLimitCategory } from "./categories";
import { keyIdSchema, mintKeyBodySchema, tenantSlugSchema } from "./schemas";
import { stored } from "./storage";
import { invalid, jsonBody, pathParam } from "./validate";

export function registerKeyRoutes(app: Hono<AdminEnv>): void {
  app.post("/tenants/:tenant/keys", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const body = await jsonBody(c, mintKeyBodySchema);
    if (!body.ok) return body.response;
    const unknown = unknownLimitCategory(body.value.limits, "limits", c.get("config"));
    if (unknown !== null) return unknown;
    const nowMs = Date.now();
    const expiresAtMs = body.value.expires_at == null ? null : Date.parse(body.value.expires_at);
    if (expiresAtMs !== null && expiresAtMs <= nowMs) return invalid("expires_at", "must be in the future");
    const db = database(c.env.DB);
    if ((await stored(() => getTenant(db, slug.value))) === null) return tenantNotFound(slug.value);

    const checkKey = await stored(() => c.get("runtime").keyCheck.forWrite(db, nowMs));
    const minted = await mintApiKey(checkKey);
    const limits = body.value.limits ?? null;
    const row = {
      id: minted.id,
      tenant: slug.value,
      name: body.value.name,
      digest: minted.digest,
      prefix: minted.prefix,
      createdAt: nowMs,
      expiresAt: expiresAtMs,
      limits: limits === null ? null : JSON.stringify(limits),
    };
    await stored(() =>
      db.batch([
        insertKey(db, row),
        insertAuditEvent(db, {
          atMs: nowMs,
          kind: "key_minted",
          actor: "admin",
          tenant: slug.value,
          subject: minted.id,
          detail: { name: row.name, expires_at: expiresAtMs === null ? null : new Date(expiresAtMs).toISOString(), limits },
        }),
      ]),
    );
    c.get("runtime").keys.clearDigest(minted.digest);
    const listed = presentKey({ ...row, revokedAt: null, lastUsedAt: null, lastUsedFrom: null, useCount: 0 });
    return c.json({ ...listed, key: minted.key }, 201, { "cache-control": "no-store" });
  });

  app.get("/tenants/:tenant/keys", async (c) => {
    const slug = pathParam(tenantSlugSchema, c.req.param("tenant"), "tenant");
    if (!slug.ok) return slug.response;
    const db = database(c.env.DB);
    if ((await stored(() => getTenant(db, slug.value))) === null) return tenantNotFound(slug.value);
    const rows = await stored(() => listKeys(db, slug.value));
    return c.json({ keys: rows.map(presentKey) });
  });

  app.delete("/keys/:id", async (c) => {
    const id = pathParam(keyIdSchema, c.req.param("id"), "id");
    if (!id.ok) return id.response;
    const db = database(c.env.DB);
    const existing = await stored(() => getKey(db, id.value));
    if (existing === null) return keyNotFound(id.value);
    if (existing.revokedAt !== null) return c.json(presentKey(existing));
    const nowMs = Date.now();
    await stored(() =>
      db.batch([
        revokeKey(db, id.value, nowMs),
        insertAuditEvent(db, { atMs: nowMs, kind: "key_revoked", actor: "admin", tenant: existing.tenant, subject: id.value, detail: { name: existing.name } }),
      ]),
    );
    c.get("runtime").keys.clearKeyId(id.value);
    await purgeBudgets(c.env, { tenant: existing.tenant, owner: `key:${id.value}` });
    return c.json(presentKey({ ...existing, revokedAt: nowMs }));
  });
}

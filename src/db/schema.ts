// Tollgate's D1 schema (drizzle, sqlite-core). Every timestamp is a Unix time
// in milliseconds (an integer column named *_at). Limits and quotas are JSON
// text validated by the admin API's zod schemas before they are written.

import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

export const tenants = sqliteTable("tenants", {
  slug: text("slug").primaryKey(),
  /** TenantLimits JSON: {"<category>": {"key"?: Limit[], "tenant"?: Limit[]}} */
  limits: text("limits").notNull().default("{}"),
  /** Quota JSON: {"bytes"?: {"soft"?, "hard"?}, "objects"?: {...}} */
  quota: text("quota").notNull().default("{}"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const apiKeys = sqliteTable(
  "api_keys",
  {
    /** The `<id>` of `tg_<id>_<secret>`: public, used by the admin API. */
    id: text("id").primaryKey(),
    tenant: text("tenant")
      .notNull()
      .references(() => tenants.slug, { onDelete: "cascade" }),
    name: text("name").notNull(),
    /** SHA-256 of the whole key, lower-case hex. The only form of the secret stored. */
    digest: text("digest").notNull(),
    /** The first characters of the key, shown in listings to recognise it. */
    prefix: text("prefix").notNull(),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at"),
    revokedAt: integer("revoked_at"),
    /** KeyLimits JSON or NULL: {"<category>": Limit[]} */
    limits: text("limits"),
    lastUsedAt: integer("last_used_at"),
    lastUsedFrom: text("last_used_from"),
    useCount: integer("use_count").notNull().default(0),
  },
  (t) => [uniqueIndex("api_keys_digest_unique").on(t.digest), index("api_keys_tenant_idx").on(t.tenant, t.createdAt)],
);

export const callerOverrides = sqliteTable("caller_overrides", {
  /** `ip:<address or /64>` or `key:<id>` */
  callerKey: text("caller_key").primaryKey(),
  /** KeyLimits JSON: {"<category>": Limit[]} */
  limits: text("limits").notNull(),
  updatedAt: integer("updated_at").notNull(),
});

export const auditEvents = sqliteTable(
  "audit_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    at: integer("at").notNull(),
    kind: text("kind").notNull(),
    /** Who: `admin`, `auditor`, `gateway` or `quota`; never a token. */
    actor: text("actor").notNull(),
    tenant: text("tenant"),
    /** What the event is about: a key id, an object, a caller digest. Never a secret. */
    subject: text("subject"),
    /** JSON with the event's figures. */
    detail: text("detail").notNull().default("{}"),
  },
  (t) => [index("audit_events_at_idx").on(t.at), index("audit_events_kind_idx").on(t.kind, t.at), index("audit_events_tenant_idx").on(t.tenant, t.at)],
);

export const usageMonthly = sqliteTable(
  "usage_monthly",
  {
    tenant: text("tenant").notNull(),
    /** Calendar month in UTC, `YYYY-MM`. */
    period: text("period").notNull(),
    metric: text("metric").notNull(),
    value: integer("value").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tenant, t.period, t.metric] }), index("usage_monthly_period_idx").on(t.period, t.tenant, t.metric)],
);


/**
 * Deployment settings the gateway makes itself. `key_check_secret`: the
 * random HMAC secret whose tag ends every minted key (src/identity/api-key.ts),
 * created by the first mint; never shown by the admin API.
 */
export const settings = sqliteTable("settings", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
  createdAt: integer("created_at").notNull(),
});

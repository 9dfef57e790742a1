// Tollgate's D1 schema (drizzle, sqlite-core). Every timestamp is a Unix time
// in milliseconds (an integer column named *_at). Limits and quotas are JSON
// text validated by the admin API's zod schemas before they are written.

import { type AnySQLiteColumn, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** Groups of tenants with a quota over all of them. */
export const orgs = sqliteTable("orgs", {
  /** Same rule as a tenant slug. */
  slug: text("slug").primaryKey(),
  /** Quota JSON, as a tenant's: {"bytes"?: {"soft"?, "hard"?}, "objects"?: {...}} */
  quota: text("quota").notNull().default("{}"),
  createdAt: integer("created_at").notNull(),
  updatedAt: integer("updated_at").notNull(),
  /**
   * Budgets of this org (src/admin/budgets.ts): JSON `{"<category>": {"period": "month"}}`
   * or NULL, so a request knows from the cached record which budgets apply.
   * Amounts and spend live in the quota Durable Object.
   */
  budgets: text("budgets"),
});

export const tenants = sqliteTable(
  "tenants",
  {
    slug: text("slug").primaryKey(),
    /** TenantLimits JSON: {"<category>": {"key"?: Limit[], "jwt"?: Limit[], "tenant"?: Limit[]}} */
    limits: text("limits").notNull().default("{}"),
    /** Quota JSON: {"bytes"?: {"soft"?, "hard"?}, "objects"?: {...}} */
    quota: text("quota").notNull().default("{}"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /**
     * The org the tenant belongs to, or NULL. The foreign key (no ON DELETE
     * action) is the backstop for a race the admin API's checks cannot see:
     * an org deleted while a tenant is being moved into it.
     */
    org: text("org").references((): AnySQLiteColumn => orgs.slug),
    /**
     * Budgets of this tenant (src/admin/budgets.ts): JSON `{"<category>": {"period": "month"}}`
     * or NULL, so a request knows from the cached record which budgets apply.
     * Amounts and spend live in the quota Durable Object.
     */
    budgets: text("budgets"),
  },
  (t) => [index("tenants_org_idx").on(t.org, t.slug)],
);

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
    /**
     * Budgets of this key (src/admin/budgets.ts): JSON `{"<category>": {"period": "month"}}`
     * or NULL, so a request knows from the cached record which budgets apply.
     * Amounts and spend live in the quota Durable Object.
     */
    budgets: text("budgets"),
  },
  (t) => [uniqueIndex("api_keys_digest_unique").on(t.digest), index("api_keys_tenant_idx").on(t.tenant, t.createdAt)],
);

export const callerOverrides = sqliteTable("caller_overrides", {
  /** `ip:<address or /64>`, `key:<id>` or `jwt:<64 hex>` */
  callerKey: text("caller_key").primaryKey(),
  /** KeyLimits JSON: {"<category>": Limit[]} */
  limits: text("limits").notNull(),
  updatedAt: integer("updated_at").notNull(),
  /** When the override stops applying; NULL: never. The row stays (listed with active: false) until deleted. */
  expiresAt: integer("expires_at"),
  /** The operator's note, at most 256 characters. */
  reason: text("reason"),
});

/**
 * Callers, tenants and networks refused with 403 `blocked`. One
 * row per target: blocking a target again replaces its expiry and reason.
 */
export const blocks = sqliteTable(
  "blocks",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** Canonical: `ip:<IPv4 or IPv6 /64>`, `net:<network>/<prefix>`, `key:<id>`, `jwt:<64 hex>` or `tenant:<slug>`. */
    target: text("target").notNull(),
    /** NULL: never expires. The row stays (listed with active: false) until deleted. */
    expiresAt: integer("expires_at"),
    reason: text("reason"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    /** `admin` (POST /blocks) or `penalty` (a limit's penalty box; its reason is `penalty:<policy>`). A penalty never replaces an admin's block. */
    source: text("source").notNull().default("admin"),
    /** A shadow block never refuses: what it would refuse is forwarded, marked and counted. */
    shadow: integer("shadow", { mode: "boolean" }).notNull().default(false),
  },
  (t) => [uniqueIndex("blocks_target_unique").on(t.target)],
);

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
  (t) => [
    index("audit_events_at_idx").on(t.at),
    index("audit_events_kind_idx").on(t.kind, t.at),
    index("audit_events_tenant_idx").on(t.tenant, t.at),
    index("audit_events_subject_idx").on(t.subject),
  ],
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
 * Corrections to usage_monthly, append-only: a row is never updated or
 * deleted. usage_monthly rows are added to by the meters' upserts, so a
 * correction written there could not be told apart from metered usage; here
 * each one keeps its own row, time and attribution. The export adds them to
 * the figures of their (tenant, period, metric).
 */
export const usageAdjustments = sqliteTable(
  "usage_adjustments",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    tenant: text("tenant").notNull(),
    /** The UTC month the correction was made in, `YYYY-MM`. */
    period: text("period").notNull(),
    metric: text("metric").notNull(),
    /** Signed amount added to the metric. */
    value: integer("value").notNull(),
    /** Why: `reconciliation` (POST /usage/reconcile?apply=true). */
    attribution: text("attribution").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("usage_adjustments_tenant_idx").on(t.tenant, t.metric), index("usage_adjustments_period_idx").on(t.period, t.tenant, t.metric)],
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

/**
 * Requests per UTC minute, tenant (`anonymous` for none) and decision
 * (`admitted`, `exempt`, a refusal's code, `shadow:<code>`), summed over
 * isolates: each isolate's flush ADDS its counts (an upsert), so two
 * isolates flushing the same minute never overwrite each other. Kept
 * `traffic.retention_days`, pruned lazily by the flushes.
 */
export const trafficMinutely = sqliteTable(
  "traffic_minutely",
  {
    minuteMs: integer("minute_ms").notNull(),
    tenant: text("tenant").notNull(),
    decision: text("decision").notNull(),
    count: integer("count").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.minuteMs, t.tenant, t.decision] }), index("traffic_minutely_tenant_idx").on(t.tenant, t.minuteMs)],
);

/**
 * The callers refused most, per UTC minute: each isolate flushes the top of
 * its heavy-hitter sketch, and the counts add. `caller` is an explain-able
 * id (`key:<id>`, `jwt:<hex>`, `tenant:<slug>`, or `hmac:<hex>` for an
 * address): never a raw address. `error` is the sketch's possible overcount.
 */
export const trafficRefused = sqliteTable(
  "traffic_refused",
  {
    minuteMs: integer("minute_ms").notNull(),
    caller: text("caller").notNull(),
    tenant: text("tenant"),
    count: integer("count").notNull().default(0),
    error: integer("error").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.minuteMs, t.caller] })],
);

/**
 * What shadow policies (a limit, budget or block with `shadow: true`) would
 * have refused, per UTC minute, policy (named as RateLimit-Policy names it,
 * `budget-…` for a budget, `block-<id>` or `penalty:<policy>` for a block),
 * tenant (`anonymous` for none) and refusal code; summed over isolates like
 * traffic_minutely and kept as long.
 */
export const trafficShadow = sqliteTable(
  "traffic_shadow",
  {
    minuteMs: integer("minute_ms").notNull(),
    policy: text("policy").notNull(),
    tenant: text("tenant").notNull(),
    decision: text("decision").notNull(),
    count: integer("count").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.minuteMs, t.policy, t.tenant, t.decision] })],
);

/**
 * The callers each shadow policy would have refused most, per UTC minute
 * (each isolate's heavy-hitter sketch, per policy): explain-able ids, an
 * address only as its keyed digest, like traffic_refused.
 */
export const trafficShadowCallers = sqliteTable(
  "traffic_shadow_callers",
  {
    minuteMs: integer("minute_ms").notNull(),
    policy: text("policy").notNull(),
    caller: text("caller").notNull(),
    tenant: text("tenant"),
    count: integer("count").notNull().default(0),
    error: integer("error").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.minuteMs, t.policy, t.caller] })],
);

/**
 * Alerts sent to `alerts.webhook_url` through the ALERTS queue, one row per
 * alert id, with its delivery state: `pending` (queued or being retried),
 * `delivered`, `failed` (the webhook refused it: a 4xx other than 408/429)
 * or `expired` (still failing 24 h after it was raised).
 */
export const alerts = sqliteTable(
  "alerts",
  {
    id: text("id").primaryKey(),
    type: text("type").notNull(),
    atMs: integer("at_ms").notNull(),
    tenant: text("tenant"),
    state: text("state").notNull(),
    attempts: integer("attempts").notNull().default(0),
    lastStatus: integer("last_status"),
    /** The body sent, JSON: what the webhook received. */
    body: text("body").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [index("alerts_at_idx").on(t.atMs)],
);

/** Every delivery attempt of an alert: when, and what came of it (`delivered`, `http_<status>`, `timeout`, `unreachable`). */
export const alertAttempts = sqliteTable(
  "alert_attempts",
  {
    alertId: text("alert_id").notNull(),
    attempt: integer("attempt").notNull(),
    atMs: integer("at_ms").notNull(),
    outcome: text("outcome").notNull(),
    status: integer("status"),
  },
  (t) => [primaryKey({ columns: [t.alertId, t.attempt] })],
);

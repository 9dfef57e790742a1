// The admin API's zod schemas: every body, query and path parameter, and the
// shapes it answers with. The OpenAPI document (openapi.ts) is generated from
// these same objects, so the validation and the documentation cannot drift.
import { z } from "zod";
import { limitError, listSizeError, MAX_LIMITS_PER_LIST, MAX_PENALTY_AFTER, MAX_PENALTY_BLOCK_S, MAX_PENALTY_WITHIN_S, MAX_SHADOW_LIMITS_PER_LIST } from "../engine/limit";

export { MAX_LIMITS_PER_LIST };
export const TENANT_SLUG = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** Category names, as in the TOLLGATE config. */
export const CATEGORY_NAME = /^[a-z][a-z0-9_]{0,31}$/;
export const KEY_ID = /^[0-9a-z]{12}$/;
const AUDIT_KIND = /^[a-z][a-z0-9_]{0,63}$/;
export const MAX_KEY_NAME_CHARS = 128;
/** Longest caller key or block target looked at; the longest real one is a `jwt:` (68) or a spelled-out IPv6 CIDR. */
export const MAX_CALLER_KEY_CHARS = 128;
export const DEFAULT_AUDIT_PAGE = 50;
export const MAX_AUDIT_PAGE = 200;

/** Schemas named in the OpenAPI document's components. */
export const registry = z.registry<{ id: string; description?: string }>();

/** The slug rule in words, for people (the OpenAPI document gives the pattern). */
export const TENANT_SLUG_RULE = "must be 1 to 64 characters: lower-case letters, digits, '.', '_' or '-', starting with a letter or digit";
export const tenantSlugSchema = z.string().regex(TENANT_SLUG, TENANT_SLUG_RULE);
export const keyIdSchema = z.string().regex(KEY_ID, "is not a key id (12 characters, 0-9 and a-z)");

/**
 * A page size (or another count) in a query string: a whole number from 1 to
 * `max`. Any run of digits is read as a number first, so a value past the
 * bound is told so ("must be <= 200"), not that it is no whole number;
 * `notWhole` is what anything else is told.
 */
export function limitParam(max: number, notWhole = "must be a whole number > 0") {
  return z
    .string()
    .regex(/^[1-9][0-9]{0,8}$/, notWhole)
    .transform(Number)
    .pipe(z.number().max(max, `must be <= ${max}`));
}

const positiveInt = z.number("must be a number").int("must be a whole number").positive("must be > 0");
const nonNegativeInt = z.number("must be a number").int("must be a whole number").min(0, "must be >= 0");

const penaltySchema = z
  .strictObject({
    after: positiveInt.max(MAX_PENALTY_AFTER, `must be <= ${MAX_PENALTY_AFTER}`).describe("Refusals by this limit that earn the caller a block."),
    within_s: z.number("must be a number").positive("must be > 0").max(MAX_PENALTY_WITHIN_S, `must be <= ${MAX_PENALTY_WITHIN_S}`).describe("The span, in seconds, those refusals are counted over."),
    block_s: positiveInt.max(MAX_PENALTY_BLOCK_S, `must be <= ${MAX_PENALTY_BLOCK_S}`).describe("How long the caller is then blocked (403 blocked, reason penalty:<policy>), in whole seconds."),
  })
  .describe("The penalty box: a caller this limit refuses `after` times within `within_s` seconds is blocked for `block_s` seconds (a block listed by GET /blocks, lifted by DELETE).");
registry.add(penaltySchema, { id: "Penalty" });

// The shape gives each field its own error path; the engine's own rule then
// has the last word, so config, admin API and engine agree on what is valid.
export const limitSchema = z
  .strictObject({
    count: positiveInt.describe("Spends admitted per window, sustained."),
    window_s: z.number("must be a number").positive("must be > 0").describe("The window in seconds."),
    burst: positiveInt.optional().describe("Largest burst; default count."),
    scope: z
      .enum(["isolate", "global"], 'must be "isolate" or "global"')
      .optional()
      .describe('"isolate": metered in each isolate on its own; "global": one limit across every isolate, through leases from the subject\'s LimitLedger (overshoot at most L·C/W). Default: the config\'s limiter.default_scope.'),
    delay_max_ms: nonNegativeInt.max(10_000, "must be <= 10000").optional().describe("Hold a request whose exact retry delay is at most this many ms, and forward it when the limit allows, instead of answering 429 (isolate-scope limits). Default 0: refuse."),
    shadow: z
      .boolean("must be true or false")
      .optional()
      .describe("Try the limit without enforcing it: it is kept exactly as if enforced, but a request it would refuse goes on, marked `Tollgate-Shadow: rate_limited;policy=\"<name>\"` and counted (GET /traffic/shadow). Not advertised in RateLimit-Policy. Switched off, it enforces from the state it kept. Never with scope global."),
    penalty: penaltySchema.optional(),
  })
  .superRefine((value, ctx) => {
    const reason = limitError(value);
    if (reason === null) return;
    // The engine's reasons start with the field they are about (`penalty.after …` for a penalty's).
    const field = /^(count|window_s|burst|scope|delay_max_ms|shadow|penalty)(?:\.(after|within_s|block_s))?\b/.exec(reason);
    ctx.addIssue({ code: "custom", message: reason, path: field === null ? [] : field[2] === undefined ? [field[1]!] : [field[1]!, field[2]] });
  });
registry.add(limitSchema, { id: "Limit", description: "A sustained `count` per `window_s` seconds with bursts up to `burst`, per isolate or across all of them (`scope`)." });

const limitListSchema = z
  .array(limitSchema, "must be a list of limits")
  .max(MAX_LIMITS_PER_LIST + MAX_SHADOW_LIMITS_PER_LIST, `at most ${MAX_LIMITS_PER_LIST} limits per list (and ${MAX_SHADOW_LIMITS_PER_LIST} shadow ones beside them)`)
  .superRefine((list, ctx) => {
    const reason = listSizeError(list);
    if (reason !== null) ctx.addIssue({ code: "custom", message: reason });
  });
const categoryKey = z.string().regex(CATEGORY_NAME, "category names match ^[a-z][a-z0-9_]{0,31}$");

export const keyLimitsSchema = z.record(categoryKey, limitListSchema, "must be an object of categories");
registry.add(keyLimitsSchema, { id: "KeyLimits", description: "Limits per category for one key or caller: up to 3 per category, all must fit (and up to 3 shadow limits beside them)." });

export const tenantLimitsSchema = z.record(
  categoryKey,
  z.strictObject({
    key: limitListSchema.optional().describe("The default for each of the tenant's keys."),
    jwt: limitListSchema.optional().describe("The default for each JWT caller whose token names this tenant."),
    tenant: limitListSchema.optional().describe("For the tenant as a whole."),
  }),
  "must be an object of categories",
);
registry.add(tenantLimitsSchema, { id: "TenantLimits", description: "Limits per category: `key` applies to each key of the tenant, `tenant` to all of them together." });

const quotaBoundSchema = z
  .strictObject({ soft: nonNegativeInt.optional(), hard: nonNegativeInt.optional() })
  .superRefine((value, ctx) => {
    if (value.soft !== undefined && value.hard !== undefined && value.soft > value.hard) {
      ctx.addIssue({ code: "custom", message: "must be <= hard", path: ["soft"] });
    }
  });
export const quotaSchema = z.strictObject({ bytes: quotaBoundSchema.optional(), objects: quotaBoundSchema.optional() });
registry.add(quotaSchema, { id: "Quota", description: "Soft and hard quotas in bytes and objects; an unset bound is unlimited." });

export const tenantBodySchema = z.strictObject({
  limits: tenantLimitsSchema.optional(),
  quota: quotaSchema.optional(),
  org: tenantSlugSchema.nullable().optional().describe("The org the tenant belongs to (it must exist); null: none."),
});
registry.add(tenantBodySchema, { id: "TenantBody" });

export const isoTimestamp = z.iso.datetime({ offset: true, message: "must be an ISO 8601 date-time with a zone, e.g. 2030-01-31T00:00:00Z" });

export const mintKeyBodySchema = z.strictObject({
  name: z.string("must be a string").min(1, "must not be empty").max(MAX_KEY_NAME_CHARS, `at most ${MAX_KEY_NAME_CHARS} characters`),
  expires_at: isoTimestamp.nullable().optional(),
  limits: keyLimitsSchema.optional(),
});
registry.add(mintKeyBodySchema, { id: "MintKeyBody" });

export const MAX_REASON_CHARS = 256;
export const reasonSchema = z.string("must be a string").max(MAX_REASON_CHARS, `at most ${MAX_REASON_CHARS} characters`);

export const overrideBodySchema = z.strictObject({
  limits: keyLimitsSchema,
  shadow: z
    .boolean("must be true or false")
    .optional()
    .describe("Try the whole override: every limit in it is a shadow limit, tried beside the limits that apply without it (which stay in force). false: every limit enforced."),
  expires_at: isoTimestamp.nullable().optional().describe("When the override stops applying; it must be in the future. Absent or null: never."),
  reason: reasonSchema.nullable().optional(),
});
registry.add(overrideBodySchema, { id: "OverrideBody" });

export const auditQuerySchema = z.strictObject({
  kind: z.string().regex(AUDIT_KIND, "must match ^[a-z][a-z0-9_]{0,63}$").optional(),
  tenant: tenantSlugSchema.optional(),
  caller: z.string().max(MAX_CALLER_KEY_CHARS, "is too long").optional().describe("A caller key or block target; validated by the route"),
  since: isoTimestamp.optional(),
  cursor: z.string().regex(/^[1-9][0-9]{0,15}$/, "must be a next_cursor from a previous page").optional(),
  limit: limitParam(MAX_AUDIT_PAGE).optional(),
});

// Answers (documentation only: the routes build them).
export const isoOut = z.string().describe("ISO 8601 date-time, UTC");
const usageSchema = z.object({
  bytes: z.number().int(),
  objects: z.number().int(),
  reserved_bytes: z.number().int(),
  quota: quotaSchema,
  requests_this_month: z.number().int(),
});
registry.add(usageSchema, { id: "TenantUsage" });

export const tenantSchema = z.object({
  tenant: z.string(),
  org: z.string().nullable(),
  limits: tenantLimitsSchema,
  quota: quotaSchema,
  created_at: isoOut,
  updated_at: isoOut,
  usage: z.object({ bytes: z.number().int(), objects: z.number().int(), reserved_bytes: z.number().int() }).nullable().optional(),
});
registry.add(tenantSchema, { id: "Tenant" });

export const keySchema = z.object({
  id: z.string(),
  tenant: z.string(),
  name: z.string(),
  prefix: z.string().describe("`tg_<id>_` and the first 4 characters of the secret"),
  created_at: isoOut,
  expires_at: isoOut.nullable(),
  revoked_at: isoOut.nullable(),
  limits: keyLimitsSchema.nullable(),
  last_used_at: isoOut.nullable(),
  last_used_from: z.string().nullable(),
  use_count: z.number().int(),
});
registry.add(keySchema, { id: "Key", description: "A key as listed: never its secret or digest." });

export const mintedKeySchema = keySchema.extend({ key: z.string().describe("The secret key, shown once.") });
registry.add(mintedKeySchema, { id: "MintedKey" });

export const overrideSchema = z.object({
  caller_key: z.string(),
  limits: keyLimitsSchema,
  shadow: z.boolean().describe("true when every limit of the override is a shadow one"),
  expires_at: isoOut.nullable(),
  reason: z.string().nullable(),
  active: z.boolean().describe("false once expires_at has passed"),
  updated_at: isoOut,
});
registry.add(overrideSchema, { id: "Override" });

export const auditEventSchema = z.object({
  id: z.number().int(),
  at: isoOut,
  kind: z.string(),
  actor: z.string(),
  tenant: z.string().nullable(),
  subject: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
});
registry.add(auditEventSchema, { id: "AuditEvent" });

export const auditPageSchema = z.object({ events: z.array(auditEventSchema), next_cursor: z.string().nullable() });
registry.add(auditPageSchema, { id: "AuditPage" });

export const problemSchema = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  detail: z.string(),
  code: z.string(),
  hint: z.string(),
  field: z.string().optional(),
});
registry.add(problemSchema, { id: "Problem", description: "RFC 9457 problem details with a stable `code`; `field` names the invalid field on 400." });

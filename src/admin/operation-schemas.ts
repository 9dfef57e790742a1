// Schemas of the caller-operation, org and reconciliation calls (docs/design.md): bodies and queries the routes validate with, and the answers the
// OpenAPI document describes. Registered in the same registry as schemas.ts.
import { z } from "zod";
import { isoOut, isoTimestamp, limitParam, MAX_CALLER_KEY_CHARS, overrideSchema, quotaSchema, reasonSchema, registry, TENANT_SLUG, tenantSchema, tenantSlugSchema } from "./schemas";

export const DEFAULT_PAGE = 50;
export const MAX_PAGE = 200;
/** Tenants checked per reconcile call: each is one quota-object call. */
export const DEFAULT_RECONCILE_PAGE = 100;
export const MAX_RECONCILE_PAGE = 200;

const cursorSlug = z.string().regex(TENANT_SLUG, "must be a next_cursor from a previous page");

/** `?cursor=<slug>&limit=` for tenants and orgs. */
export const slugPageQuerySchema = z.strictObject({ cursor: cursorSlug.optional(), limit: limitParam(MAX_PAGE).optional() });
/** `?cursor=<caller key>&limit=` for overrides. */
export const overridePageQuerySchema = z.strictObject({
  cursor: z.string().min(1).max(MAX_CALLER_KEY_CHARS, "must be a next_cursor from a previous page").optional(),
  limit: limitParam(MAX_PAGE).optional(),
});
/** `?cursor=<id>&limit=` for blocks. */
export const idPageQuerySchema = z.strictObject({
  cursor: z.string().regex(/^[1-9][0-9]{0,15}$/, "must be a next_cursor from a previous page").transform(Number).optional(),
  limit: limitParam(MAX_PAGE).optional(),
});
export const blockIdSchema = z.string().regex(/^[1-9][0-9]{0,15}$/, "is not a block id").transform(Number);

export const blockBodySchema = z.strictObject({
  target: z.string("must be a string").describe("ip:<address> (IPv6: its /64), net:<CIDR>, key:<id>, jwt:<64 hex> or tenant:<slug>"),
  expires_at: isoTimestamp.nullable().optional().describe("When the block stops applying; it must be in the future. Absent or null: never."),
  reason: reasonSchema.nullable().optional(),
  shadow: z.boolean("must be true or false").optional().describe("Try the block: a request it would refuse goes on, marked `Tollgate-Shadow: blocked;policy=\"block-<id>\"` and counted (GET /traffic/shadow). Default false."),
});
registry.add(blockBodySchema, { id: "BlockBody" });

export const orgBodySchema = z.strictObject({ quota: quotaSchema.optional().describe("The org's quota over all its tenants; absent: {} (unlimited).") });
registry.add(orgBodySchema, { id: "OrgBody" });

export const reconcileQuerySchema = z.strictObject({
  apply: z.enum(["true", "false"], "must be true or false").optional(),
  tenant: tenantSlugSchema.optional(),
  cursor: cursorSlug.optional(),
  limit: limitParam(MAX_RECONCILE_PAGE).optional(),
});

// Answers (documentation only).
const nextCursor = z.string().nullable().describe("Pass as `cursor` for the next page; null on the last page.");
const usageTotals = z.object({ bytes: z.number().int(), objects: z.number().int(), reserved_bytes: z.number().int() });

export const tenantPageSchema = z.object({ tenants: z.array(tenantSchema), next_cursor: nextCursor });
registry.add(tenantPageSchema, { id: "TenantPage" });

export const overridePageSchema = z.object({ overrides: z.array(overrideSchema), next_cursor: nextCursor });
registry.add(overridePageSchema, { id: "OverridePage" });

export const blockSchema = z.object({
  id: z.number().int(),
  target: z.string().describe("The canonical target"),
  expires_at: isoOut.nullable(),
  reason: z.string().nullable(),
  created_at: isoOut,
  updated_at: isoOut,
  active: z.boolean().describe("false once expires_at has passed"),
  shadow: z.boolean().describe("true: refuses nothing, marks and counts what it would refuse"),
  penalty: z.string().nullable().describe("The policy whose penalty box imposed it (its reason is `penalty:<policy>`); null for an operator's block"),
});
registry.add(blockSchema, { id: "Block" });

export const blockPageSchema = z.object({ blocks: z.array(blockSchema), next_cursor: nextCursor });
registry.add(blockPageSchema, { id: "BlockPage" });

export const orgSchema = z.object({
  org: z.string(),
  quota: quotaSchema,
  created_at: isoOut,
  updated_at: isoOut,
  tenant_count: z.number().int().optional(),
  tenants: z.array(z.string()).optional().describe("GET /orgs/{org}: its tenants, in slug order"),
  usage: usageTotals.nullable().optional().describe("GET /orgs/{org}: summed over its tenants' quota objects; null when one does not answer"),
});
registry.add(orgSchema, { id: "Org" });

export const orgPageSchema = z.object({ orgs: z.array(orgSchema), next_cursor: nextCursor });
registry.add(orgPageSchema, { id: "OrgPage" });

export const reconcileReportSchema = z.object({
  metric: z.literal("bytes_stored"),
  apply: z.boolean(),
  checked: z.number().int().describe("Tenants compared in this call"),
  drifting: z.number().int().describe("Tenants whose metered total differs from their quota object"),
  tenants: z
    .array(
      z.object({
        tenant: z.string(),
        status: z
          .enum(["drift", "recent", "adjusted", "changed", "unavailable"])
          .describe("`recent`: the tenant's stored bytes changed within usage.flush_interval_s (plus up to 5 s), so its metering may not have landed: never applied; run again after `wait_s`"),
        metered_bytes: z.number().int().describe("usage_monthly rows of bytes_stored, every month, plus adjustments"),
        quota_bytes: z.number().int().nullable().describe("The quota object's committed bytes (the truth); null when it did not answer"),
        drift_bytes: z.number().int().nullable().describe("quota_bytes − metered_bytes: what an adjustment adds"),
        wait_s: z.number().int().optional().describe("For `recent`: seconds until the drift is old enough to apply"),
      }),
    )
    .describe("Only tenants that drift or could not be checked"),
  next_cursor: nextCursor,
});
registry.add(reconcileReportSchema, { id: "ReconcileReport" });

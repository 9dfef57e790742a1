// The OpenAPI paths of the caller-operation, org, tenant-listing and
// reconciliation calls.
import { DEFAULT_PAGE, DEFAULT_RECONCILE_PAGE, MAX_PAGE, MAX_RECONCILE_PAGE } from "./operation-schemas";
import { MAX_ORG_TENANTS_READ } from "./orgs";
import { COMMON_ERRORS, type Json, jsonContent, op, pageParams, problemResponse, ref, WRITE_ERRORS } from "./openapi-parts";
import { MAX_CALLER_KEY_CHARS, TENANT_SLUG } from "./schemas";

const callerKeyParam: Json = {
  name: "caller_key",
  in: "path",
  required: true,
  description:
    "`ip:<address>` (an IPv6 address stands for its /64; URL-encode the `/` of `/64`), `key:<id>` or `jwt:<64 lower-case hex>`. `tenant:` is refused: set a tenant's own limits, or block it.",
  schema: { type: "string", maxLength: MAX_CALLER_KEY_CHARS },
};
const explainCallerParam: Json = {
  name: "caller_key",
  in: "path",
  required: true,
  description: "`key:<id>`, `ip:<address>` (an IPv6 address stands for its /64; URL-encode the `/`), `jwt:<64 lower-case hex>`, `tenant:<slug>`, or `anonymous` (the aggregate every anonymous address shares)",
  schema: { type: "string", maxLength: MAX_CALLER_KEY_CHARS },
};
const orgParam: Json = { name: "org", in: "path", required: true, schema: { type: "string", pattern: TENANT_SLUG.source } };
const blockIdParam: Json = { name: "id", in: "path", required: true, schema: { type: "integer", minimum: 1 } };
const deleted = (props: Json): Json => ({ description: "deleted", content: jsonContent({ type: "object", properties: { ...props, deleted: { type: "boolean" } } }) });

const sessionState: Json = {
  description: "whether a console session is live",
  content: jsonContent({
    type: "object",
    properties: { signed_in: { type: "boolean" }, role: { type: "string", enum: ["admin", "auditor"] }, expires_at: { type: "string" }, ended: { type: "boolean" } },
  }),
};

export function operationPaths(): Json {
  return {
    "/session": {
      get: op("Whether this browser holds a live console session (the `tollgate_console` cookie, read only beside `X-Tollgate-Console: 1`). Always 200, with no token: signed in or not", { "200": sessionState }, { security: [] }),
      post: op(
        "Sign the console in: the Bearer token (admin or auditor; never a session) is exchanged for the `tollgate_console` cookie — HttpOnly; Secure; SameSite=Strict; Path=/_tollgate; 12 hours; signed with a key derived from the token, so a changed token ends it. Every admin call then accepts the cookie beside `X-Tollgate-Console: 1`",
        { "200": sessionState, ...COMMON_ERRORS },
      ),
      delete: op("Sign the console out: clears the cookie", { "200": sessionState, "400": problemResponse("invalid_request: no `X-Tollgate-Console: 1`") }, { security: [] }),
    },
    "/tenants": {
      get: op("Tenants in slug order, with their org", { "200": { description: "a page", content: jsonContent(ref("TenantPage")) }, "400": problemResponse("invalid_request"), ...COMMON_ERRORS }, { parameters: pageParams("a tenant slug", MAX_PAGE, DEFAULT_PAGE) }),
    },
    "/overrides": {
      get: op("Caller overrides in caller-key order, with `active` (false once expired)", { "200": { description: "a page", content: jsonContent(ref("OverridePage")) }, "400": problemResponse("invalid_request"), ...COMMON_ERRORS }, { parameters: pageParams("a caller key", MAX_PAGE, DEFAULT_PAGE) }),
    },
    "/overrides/{caller_key}": {
      parameters: [callerKeyParam],
      get: op("One caller override", { "200": { description: "the override", content: jsonContent(ref("Override")) }, "404": problemResponse("not_found"), ...COMMON_ERRORS }),
      put: op(
        "Set a caller override, optionally until `expires_at` (which must be in the future); it replaces limits, expiry and reason together",
        { "200": { description: "replaced", content: jsonContent(ref("Override")) }, "201": { description: "created", content: jsonContent(ref("Override")) }, ...WRITE_ERRORS },
        { requestBody: { required: true, content: jsonContent(ref("OverrideBody")) } },
      ),
      delete: op("Remove a caller override", { "200": deleted({ caller_key: { type: "string" } }), "404": problemResponse("not_found"), ...WRITE_ERRORS }),
    },
    "/callers/{caller_key}": {
      parameters: [explainCallerParam],
      get: op(
        "Explain a caller: every (category, subject, limit) that applies, its source, its scope and its standing (remaining, reset_ms: this isolate's, or the ledger's for a global limit, null with `ledger_error` when the ledger cannot be read; a limit that holds requests rather than refusing them says `delay_max_ms`), the override and the block that apply, the budgets, and `status_charges`: the routes whose charges are taken only when the origin's status matches (`charge_on_status`); charges nothing",
        { "200": { description: "the explanation" }, "400": problemResponse("invalid_request: `caller_key`"), "404": problemResponse("not_found: no such key or tenant"), ...COMMON_ERRORS },
      ),
    },
    "/callers/{caller_key}/state": {
      parameters: [explainCallerParam],
      delete: op("Forget the caller's own limiter state in this isolate, and in the ledger of each global limit (audited). A shared subject (the key's or token's tenant, the anonymous aggregate) is left alone: reset it by naming it (`tenant:<slug>`, `anonymous`)", {
        "200": { description: "reset" },
        "400": problemResponse("invalid_request: `caller_key`"),
        "404": problemResponse("not_found"),
        ...WRITE_ERRORS,
        "503": problemResponse("admin_disabled, admin_unavailable (D1 failed), or limits_unavailable (a global limit's ledger could not be reset: retry)"),
      }),
    },
    "/blocks": {
      get: op("Blocks in creation order, with `active` (false once expired)", { "200": { description: "a page", content: jsonContent(ref("BlockPage")) }, "400": problemResponse("invalid_request"), ...COMMON_ERRORS }, { parameters: pageParams("a block id", MAX_PAGE, DEFAULT_PAGE) }),
      post: op(
        "Block a caller, tenant or network (403 `blocked` at the gateway), optionally until `expires_at`. Blocking a target that has a block replaces its expiry and reason (200, same id).",
        {
          "201": { description: "created", content: jsonContent(ref("Block")) },
          "200": { description: "the target's block, replaced", content: jsonContent(ref("Block")) },
          ...WRITE_ERRORS,
          "400": problemResponse("invalid_request: `field` is `target` (not a valid target), `expires_at` (malformed or not in the future) or `reason`"),
        },
        { requestBody: { required: true, content: jsonContent(ref("BlockBody")) } },
      ),
    },
    "/blocks/{id}": {
      parameters: [blockIdParam],
      get: op("One block", { "200": { description: "the block", content: jsonContent(ref("Block")) }, "404": problemResponse("not_found"), ...COMMON_ERRORS }),
      delete: op("Remove a block", { "200": deleted({ id: { type: "integer" }, target: { type: "string" } }), "404": problemResponse("not_found"), ...WRITE_ERRORS }),
    },
    "/orgs": {
      get: op("Orgs in slug order, with their tenant counts", { "200": { description: "a page", content: jsonContent(ref("OrgPage")) }, "400": problemResponse("invalid_request"), ...COMMON_ERRORS }, { parameters: pageParams("an org slug", MAX_PAGE, DEFAULT_PAGE) }),
    },
    "/orgs/{org}": {
      parameters: [orgParam],
      put: op("Create or replace an org and its quota", { "200": { description: "replaced", content: jsonContent(ref("Org")) }, "201": { description: "created", content: jsonContent(ref("Org")) }, ...WRITE_ERRORS }, { requestBody: { content: jsonContent(ref("OrgBody")) } }),
      get: op(`An org with its tenants and their quota usage summed (null when a quota object does not answer, or the org has more than ${MAX_ORG_TENANTS_READ} tenants)`, { "200": { description: "the org", content: jsonContent(ref("Org")) }, "404": problemResponse("not_found"), ...COMMON_ERRORS }),
      delete: op("Delete an org that no tenant names", { "200": deleted({ org: { type: "string" } }), "404": problemResponse("not_found"), "409": problemResponse("conflict: tenants still name the org (`tenants` says how many)"), ...WRITE_ERRORS }),
    },
    "/usage/reconcile": {
      post: op(
        "Compare each tenant's metered bytes_stored (every month, plus adjustments) with its quota object's bytes and report the drift; with apply=true, append one adjustment (attribution `reconciliation`, this UTC month) per drifting tenant, audited. A page of tenants per call: follow `next_cursor`.",
        { "200": { description: "the report", content: jsonContent(ref("ReconcileReport")) }, ...WRITE_ERRORS },
        {
          parameters: [
            { name: "apply", in: "query", schema: { type: "string", enum: ["true", "false"], default: "false" } },
            { name: "tenant", in: "query", description: "only this tenant", schema: { type: "string", pattern: TENANT_SLUG.source } },
            ...pageParams("a tenant slug", MAX_RECONCILE_PAGE, DEFAULT_RECONCILE_PAGE),
          ],
        },
      ),
    },
  };
}

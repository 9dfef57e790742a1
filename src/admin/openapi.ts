// The OpenAPI 3.1 document, built from the same zod schemas that validate the
// requests (schemas.ts), once per isolate on first request.
import type { Hono } from "hono";
import { z } from "zod";
import type { AdminEnv } from "./admin-env";
import { EXPORT_FORMATS, MAX_EXPORT_MONTHS, MAX_EXPORT_ROWS, PERIOD } from "./export";
import { COMMON_ERRORS, type Json, jsonContent, op, problemResponse, ref, tenantParam, WRITE_ERRORS } from "./openapi-parts";
import { operationPaths } from "./openapi-operations";
import { budgetPaths } from "./openapi-budgets";
import { globalPaths } from "./openapi-global";
// Registers the budget schemas in the components even when the budget routes are not loaded.
import "./budget-schemas";
import { trafficPaths } from "./openapi-traffic";
import { KEY_ID, MAX_AUDIT_PAGE, MAX_CALLER_KEY_CHARS, registry, TENANT_SLUG } from "./schemas";

const keyIdParam: Json = { name: "id", in: "path", required: true, schema: { type: "string", pattern: KEY_ID.source } };
function components(): Json {
  const generated = z.toJSONSchema(registry, { target: "draft-2020-12", io: "input", uri: (id) => `#/components/schemas/${id}` }) as { schemas: Record<string, Json> };
  const schemas: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(generated.schemas)) {
    const { $schema: _schema, $id: _id, ...rest } = schema;
    schemas[id] = rest;
  }
  return { schemas, securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN (read and write) or AUDITOR_TOKEN (read only)" } } };
}

export function openApiDocument(): Json {
  return {
    openapi: "3.1.0",
    info: {
      title: "Tollgate admin API",
      version: "1",
      description:
        "Tenants, orgs, managed keys, caller overrides, blocks, usage, reconciliation and audit. Timestamps in answers are ISO 8601 strings in UTC. A change reaches the isolate that served it at once and every other isolate within cache_ttl_s (default 10 s).",
    },
    servers: [{ url: "/_tollgate/admin/v1" }],
    security: [{ bearer: [] }],
    components: components(),
    paths: {
      "/tenants/{tenant}": {
        parameters: [tenantParam],
        put: op("Create or replace a tenant", { "200": { description: "replaced", content: jsonContent(ref("Tenant")) }, "201": { description: "created", content: jsonContent(ref("Tenant")) }, ...WRITE_ERRORS }, { requestBody: { content: jsonContent(ref("TenantBody")) } }),
        get: op("A tenant, with its live quota usage (null when the quota object does not answer)", { "200": { description: "the tenant", content: jsonContent(ref("Tenant")) }, "404": problemResponse("not_found"), ...COMMON_ERRORS }),
        delete: op(
          "Delete a tenant, its keys and their overrides, and empty its quota object (first: if that fails, nothing is deleted and the call answers 503 quota_unavailable; retry it)",
          {
            "200": { description: "deleted", content: jsonContent({ type: "object", properties: { tenant: { type: "string" }, deleted: { type: "boolean" }, keys_deleted: { type: "integer" } } }) },
            "404": problemResponse("not_found"),
            ...WRITE_ERRORS,
            "503": problemResponse("quota_unavailable (the quota object could not be emptied; nothing was deleted), admin_unavailable or admin_disabled"),
          },
        ),
      },
      "/tenants/{tenant}/limits": {
        parameters: [tenantParam],
        put: op("Set a tenant's limits, quota and/or org (a field left out keeps its value; `org: null` leaves the org)", { "200": { description: "the tenant", content: jsonContent(ref("Tenant")) }, "404": problemResponse("not_found"), ...WRITE_ERRORS }, { requestBody: { content: jsonContent(ref("TenantBody")) } }),
      },
      "/tenants/{tenant}/keys": {
        parameters: [tenantParam],
        post: op("Mint a key; `key` is the secret and is shown only in this answer", { "201": { description: "minted", content: jsonContent(ref("MintedKey")) }, "404": problemResponse("not_found"), ...WRITE_ERRORS }, { requestBody: { required: true, content: jsonContent(ref("MintKeyBody")) } }),
        get: op("The tenant's keys (never a secret or digest)", { "200": { description: "keys", content: jsonContent({ type: "object", properties: { keys: { type: "array", items: ref("Key") } } }) }, "404": problemResponse("not_found"), ...COMMON_ERRORS }),
      },
      "/keys/{id}": {
        parameters: [keyIdParam],
        delete: op("Revoke a key (revoking a revoked key changes nothing)", { "200": { description: "the revoked key", content: jsonContent(ref("Key")) }, "404": problemResponse("not_found"), ...WRITE_ERRORS }),
      },
      "/tenants/{tenant}/usage": {
        parameters: [tenantParam],
        get: op("Quota usage (live, from the tenant's Durable Object) and requests this UTC month (flushed every usage.flush_interval_s)", { "200": { description: "usage", content: jsonContent(ref("TenantUsage")) }, "404": problemResponse("not_found"), "503": problemResponse("quota_unavailable"), ...COMMON_ERRORS }),
      },
      "/tenants/{tenant}/reindex": {
        parameters: [tenantParam],
        post: op("Recount the quota counters from the owner records and report the drift (after − before)", { "200": { description: "the recount" }, "404": problemResponse("not_found"), ...WRITE_ERRORS }),
      },
      "/audit": {
        get: op(
          "Audit events, newest first",
          { "200": { description: "a page", content: jsonContent(ref("AuditPage")) }, "400": problemResponse("invalid_request"), ...COMMON_ERRORS },
          {
            parameters: [
              { name: "kind", in: "query", schema: { type: "string" } },
              { name: "tenant", in: "query", schema: { type: "string", pattern: TENANT_SLUG.source } },
              {
                name: "caller",
                in: "query",
                description: "Events about this caller key or block target (ip:, net:, jwt:, key:, tenant:); addresses, networks and JWT callers are stored as keyed digests (`hmac:<hex>`) and matched as such",
                schema: { type: "string", maxLength: MAX_CALLER_KEY_CHARS },
              },
              { name: "since", in: "query", description: "ISO 8601 date-time", schema: { type: "string", format: "date-time" } },
              { name: "cursor", in: "query", description: "`next_cursor` of the previous page", schema: { type: "string" } },
              { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: MAX_AUDIT_PAGE, default: 50 } },
            ],
          },
        ),
      },
      "/usage/export": {
        get: op(
          "Chargeback rows (tenant, period, metric, value, status) for a range of UTC months, sorted by period, tenant, metric, as an attachment. `value` is the metered figure plus the reconciliation adjustments made in that month; `status` is `final` for a finished UTC month and `provisional` for the current one. CSV is RFC 4180 (CRLF, a header row, every text cell quoted); a text cell that begins with =, +, -, @, tab, CR or LF (also after NFKC normalisation and leading spaces) gets a leading `'`; values are bare integers. The same data gives byte-identical output.",
          {
            "200": {
              description: "the export (Content-Disposition: attachment; filename=\"tollgate-usage-<from>-<to>.<format>\")",
              content: { "text/csv": { schema: { type: "string" } }, "application/x-ndjson": { schema: { type: "string", description: 'one {"tenant","period","metric","value","status"} object per line' } } },
            },
            "400": problemResponse(`invalid_request: a malformed month, \`to\` before \`from\`, more than ${MAX_EXPORT_MONTHS} months, an unknown format or tenant, or more than ${MAX_EXPORT_ROWS} rows (narrow the range)`),
            ...COMMON_ERRORS,
          },
          {
            parameters: [
              { name: "from", in: "query", description: "first month, inclusive; default the current UTC month", schema: { type: "string", pattern: PERIOD.source } },
              { name: "to", in: "query", description: `last month, inclusive; default \`from\`; at most ${MAX_EXPORT_MONTHS} months from \`from\`, both counted`, schema: { type: "string", pattern: PERIOD.source } },
              { name: "format", in: "query", schema: { type: "string", enum: [...EXPORT_FORMATS], default: "csv" } },
              { name: "tenant", in: "query", description: "only this tenant's rows", schema: { type: "string", pattern: TENANT_SLUG.source } },
            ],
          },
        ),
      },
      ...operationPaths(),
      ...budgetPaths(),
      ...trafficPaths(),
      ...globalPaths(),
      "/openapi.json": { get: op("This document", { "200": { description: "OpenAPI 3.1" }, ...COMMON_ERRORS }) },
    },
  };
}

let documentText: string | null = null;

export function registerOpenApiRoute(app: Hono<AdminEnv>): void {
  app.get("/openapi.json", (c) => {
    documentText ??= JSON.stringify(openApiDocument());
    return c.body(documentText, 200, { "content-type": "application/json" });
  });
}

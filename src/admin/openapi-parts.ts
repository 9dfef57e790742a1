// Building blocks of the OpenAPI document, shared by openapi.ts and
// openapi-operations.ts.
import { TENANT_SLUG } from "./schemas";

export type Json = Record<string, unknown>;

export const ref = (id: string): Json => ({ $ref: `#/components/schemas/${id}` });
export const jsonContent = (schema: Json): Json => ({ "application/json": { schema } });
export const problemResponse = (description: string): Json => ({ description, content: { "application/problem+json": { schema: ref("Problem") } } });

export const COMMON_ERRORS: Json = {
  "401": problemResponse("admin_unauthorized: no token, a wrong one, or one in the query string"),
  "429": problemResponse("rate_limited: this token's `admin` limit; see Retry-After"),
  "503": problemResponse("admin_disabled (no ADMIN_TOKEN) or admin_unavailable (D1 failed; nothing was changed)"),
};
export const WRITE_ERRORS: Json = {
  ...COMMON_ERRORS,
  "400": problemResponse("invalid_request: `field` names the invalid field; nothing was changed"),
  "403": problemResponse("admin_forbidden: the auditor token may only read"),
};

export const tenantParam: Json = { name: "tenant", in: "path", required: true, schema: { type: "string", pattern: TENANT_SLUG.source } };

export function op(summary: string, responses: Json, extra: Json = {}): Json {
  return { summary, responses, ...extra };
}

/** `cursor` and `limit` query parameters of a paged listing. */
export function pageParams(cursor: string, maxLimit: number, defaultLimit: number): Json[] {
  return [
    { name: "cursor", in: "query", description: `\`next_cursor\` of the previous page (${cursor})`, schema: { type: "string" } },
    { name: "limit", in: "query", schema: { type: "integer", minimum: 1, maximum: maxLimit, default: defaultLimit } },
  ];
}

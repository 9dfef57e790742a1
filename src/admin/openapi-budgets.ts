// The OpenAPI paths of the budget calls (src/admin/budgets.ts), for each owner: tenant, key and org.
import { COMMON_ERRORS, type Json, jsonContent, op, problemResponse, ref, tenantParam, WRITE_ERRORS } from "./openapi-parts";
import { KEY_ID, TENANT_SLUG } from "./schemas";

const categoryParam: Json = {
  name: "category",
  in: "path",
  required: true,
  description: "`request`, or a category the TOLLGATE config names (routes' charges, response_charge, categories); any other is 400 listing the known ones",
  schema: { type: "string", pattern: "^[a-z][a-z0-9_]{0,31}$" },
};
const OWNERS: readonly (readonly [base: string, param: Json, who: string])[] = [
  ["/tenants/{tenant}", tenantParam, "tenant"],
  ["/keys/{id}", { name: "id", in: "path", required: true, schema: { type: "string", pattern: KEY_ID.source } }, "key"],
  ["/orgs/{org}", { name: "org", in: "path", required: true, schema: { type: "string", pattern: TENANT_SLUG.source } }, "org"],
];
const idempotencyKeyParam: Json = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description:
    "Makes a retry safe: the same key for the same owner within 24 hours adds nothing and answers exactly as the first top-up did (with `Idempotent-Replayed: true`); the same key with another category or amount is 409. 1 to 200 visible ASCII characters; a quoted value is read without its quotes.",
  schema: { type: "string", minLength: 1, maxLength: 200 },
};
const UNAVAILABLE = problemResponse("budget_unavailable (the quota object did not answer; nothing was changed), admin_unavailable or admin_disabled");

export function budgetPaths(): Json {
  const paths: Json = {};
  for (const [base, param, who] of OWNERS) {
    paths[`${base}/budgets`] = {
      parameters: [param],
      get: op(`The ${who}'s budgets with their spend this period`, { "200": { description: "budgets", content: jsonContent({ type: "object", properties: { owner: { type: "string" }, budgets: { type: "array", items: ref("Budget") } } }) }, "404": problemResponse("not_found: no such " + who), ...COMMON_ERRORS, "503": UNAVAILABLE }),
    };
    paths[`${base}/budgets/{category}`] = {
      parameters: [param, categoryParam],
      get: op(`One budget of the ${who}`, { "200": { description: "the budget", content: jsonContent(ref("Budget")) }, "400": problemResponse("invalid_request: an unknown category"), "404": problemResponse("not_found"), ...COMMON_ERRORS, "503": UNAVAILABLE }),
      put: op(
        `Create or replace the ${who}'s budget of a category (the spend of the current period stays when the period stays); audited`,
        { "200": { description: "replaced", content: jsonContent(ref("Budget")) }, "201": { description: "created", content: jsonContent(ref("Budget")) }, "404": problemResponse("not_found: no such " + who), ...WRITE_ERRORS, "503": UNAVAILABLE },
        { requestBody: { required: true, content: jsonContent(ref("BudgetBody")) } },
      ),
      delete: op(`Delete the ${who}'s budget of a category; audited`, { "200": { description: "deleted", content: jsonContent({ type: "object", properties: { owner: { type: "string" }, category: { type: "string" }, deleted: { type: "boolean" } } }) }, "404": problemResponse("not_found"), ...WRITE_ERRORS, "503": UNAVAILABLE }),
    };
    paths[`${base}/budgets/{category}/topups`] = {
      parameters: [param, categoryParam],
      post: op(
        "Add to prepaid credits (a budget with period `none`); 400 on a periodic budget; audited with its reason (a top-up that landed is answered 201 even when the audit write fails: it is retried in the background)",
        {
          "201": { description: "the credits after the top-up (or, for a repeated Idempotency-Key, the first top-up's answer)", content: jsonContent(ref("Budget")) },
          "404": problemResponse("not_found"),
          "409": problemResponse("conflict: the Idempotency-Key was given to another top-up of this owner in the last 24 hours"),
          ...WRITE_ERRORS,
          "503": problemResponse("budget_unavailable (the quota object did not answer: the top-up is not confirmed; send it again with the same Idempotency-Key), admin_unavailable or admin_disabled"),
        },
        { requestBody: { required: true, content: jsonContent(ref("TopUpBody")) }, parameters: [idempotencyKeyParam] },
      ),
    };
  }
  return paths;
}

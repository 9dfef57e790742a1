// The route option `response_charge`: which category the
// origin's answer prices, where the cost is read, and the reserve spent
// before forwarding. Validated by zod, compiled once per config.
import { z } from "zod";
import { MAX_COST } from "../engine/limit";
import { CATEGORY_NAME } from "../engine/routes";
import { compileJsonPath, type JsonPath, jsonPathError } from "./json-path";

/** Units spent before forwarding when the route gives no `reserve`. */
export const DEFAULT_RESPONSE_RESERVE = 1;
/** An HTTP field name (RFC 9110 token), at most 64 characters. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;

/**
 * `{category, header | json, reserve?}`: exactly one of `header` (a response
 * header holding a whole number, e.g. `x-usage-total-tokens`) and `json` (a
 * path into a JSON body or SSE event data, e.g. `usage.total_tokens`; syntax
 * in json-path.ts). `reserve` (default 1) is spent before forwarding and must
 * fit like any charge, so it is at most the engine's MAX_COST.
 */
export const responseChargeSchema = z
  .strictObject({
    category: z.string("must be a string").regex(CATEGORY_NAME, "must match ^[a-z][a-z0-9_]{0,31}$"),
    header: z.string("must be a string").regex(HEADER_NAME, "must be an HTTP header name (letters, digits, - and the like; at most 64)").optional(),
    json: z
      .string("must be a string")
      .superRefine((path, ctx) => {
        const reason = jsonPathError(path);
        if (reason !== null) ctx.addIssue({ code: "custom", message: reason });
      })
      .optional(),
    reserve: z
      .number("must be a number")
      .int("must be a whole number")
      .min(0, "must be >= 0")
      .max(MAX_COST, `must be <= ${MAX_COST}`)
      .default(DEFAULT_RESPONSE_RESERVE),
  })
  .superRefine((spec, ctx) => {
    if ((spec.header === undefined) === (spec.json === undefined)) {
      ctx.addIssue({ code: "custom", message: "give exactly one of header (a response header name) or json (a path such as usage.total_tokens)" });
    }
  });

/** As config writes it. */
export type ResponseChargeSpec = z.input<typeof responseChargeSchema>;

export type ResponseCostSource = { readonly kind: "header"; readonly name: string } | { readonly kind: "json"; readonly path: JsonPath };

/** The compiled option: what the gateway needs per request, built once. */
export interface ResponseCharge {
  readonly category: string;
  readonly reserve: number;
  readonly source: ResponseCostSource;
}

export type ResponseChargeResult = { ok: true; charge: ResponseCharge } | { ok: false; field: string; message: string };

/**
 * Validates and compiles a `response_charge` value. On failure `field` is the
 * dotted field inside the option (`json`, `reserve`; empty for the object
 * itself), for the caller to prefix with the route's position.
 */
export function parseResponseCharge(raw: unknown): ResponseChargeResult {
  const parsed = responseChargeSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { ok: false, field: issue === undefined ? "" : issue.path.map(String).join("."), message: issue?.message ?? "is invalid" };
  }
  return { ok: true, charge: compileResponseCharge(parsed.data) };
}

/** Compiles a value responseChargeSchema accepted. */
export function compileResponseCharge(spec: z.output<typeof responseChargeSchema>): ResponseCharge {
  const source: ResponseCostSource =
    spec.header !== undefined ? { kind: "header", name: spec.header.toLowerCase() } : { kind: "json", path: compileJsonPath(spec.json!) };
  return Object.freeze({ category: spec.category, reserve: spec.reserve, source: Object.freeze(source) });
}

// Turns zod's verdict into the admin API's 400: `invalid_request` with `field`
// naming the first invalid field as a dotted path (`limits.request.key.0.count`).
import type { Context } from "hono";
import type { z } from "zod";
import { problem } from "../errors";

/** Admin bodies are small; anything larger is refused before it is parsed. */
export const MAX_ADMIN_BODY_BYTES = 64 * 1024;

export type Parsed<T> = { ok: true; value: T } | { ok: false; response: Response };

function fieldOf(issue: z.core.$ZodIssue, prefix: string): string {
  const path = issue.path.map(String);
  // An unknown field is reported on its parent; name the field itself.
  if (issue.code === "unrecognized_keys" && issue.keys.length > 0) path.push(String(issue.keys[0]));
  const joined = path.join(".");
  if (prefix === "") return joined === "" ? "body" : joined;
  return joined === "" ? prefix : `${prefix}.${joined}`;
}

export function invalid(field: string, message: string): Response {
  return problem("invalid_request", { detail: `${field}: ${message}`, extras: { field } });
}

/** Validates `value` against `schema`; `prefix` names where it came from ("" for a body). */
export function validate<S extends z.ZodType>(schema: S, value: unknown, prefix: string): Parsed<z.output<S>> {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  const issue = result.error.issues[0];
  if (issue === undefined) return { ok: false, response: invalid(prefix || "body", "is invalid") };
  const field = fieldOf(issue, prefix);
  const message = issue.code === "unrecognized_keys" ? "is not a known field" : issue.message;
  return { ok: false, response: invalid(field, message) };
}

/** Reads and validates a JSON body. An empty body counts as `{}` so optional-only bodies may be omitted. */
export async function jsonBody<S extends z.ZodType>(c: Context, schema: S): Promise<Parsed<z.output<S>>> {
  const declared = Number(c.req.header("content-length") ?? "0");
  if (declared > MAX_ADMIN_BODY_BYTES) return { ok: false, response: invalid("body", `must be at most ${MAX_ADMIN_BODY_BYTES} bytes`) };
  const text = await c.req.text();
  if (text.length > MAX_ADMIN_BODY_BYTES) return { ok: false, response: invalid("body", `must be at most ${MAX_ADMIN_BODY_BYTES} bytes`) };
  let value: unknown = {};
  if (text.trim() !== "") {
    try {
      value = JSON.parse(text);
    } catch {
      return { ok: false, response: invalid("body", "is not valid JSON") };
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return { ok: false, response: invalid("body", "must be a JSON object") };
  return validate(schema, value, "");
}

/** Validates a path parameter. */
export function pathParam<S extends z.ZodType>(schema: S, value: string | undefined, name: string): Parsed<z.output<S>> {
  return validate(schema, value, name);
}

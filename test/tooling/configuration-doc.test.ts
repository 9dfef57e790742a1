// docs/configuration.md is the reference of every config field: each field
// src/config.ts accepts has a row there, named as the config names it.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { configSchema } from "../../src/config";

const ROOT = resolve(import.meta.dirname, "../..");

/** The schema under defaults, optionals and transforms. */
function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema as z.ZodType & { def: { type: string; innerType?: z.ZodType; in?: z.ZodType } };
  for (;;) {
    if ((s.def.type === "default" || s.def.type === "optional") && s.def.innerType !== undefined) s = s.def.innerType as typeof s;
    else if (s.def.type === "pipe" && s.def.in !== undefined) s = s.def.in as typeof s;
    else return s;
  }
}

/** Every field path of an object schema: `usage.flush_interval_s`, `mode`, … */
function fieldPaths(schema: z.ZodType, prefix = ""): string[] {
  const s = unwrap(schema) as z.ZodType & { def: { type: string; shape?: Record<string, z.ZodType> } };
  if (s.def.type !== "object" || s.def.shape === undefined) return [prefix];
  return Object.entries(s.def.shape).flatMap(([name, field]) => fieldPaths(field, prefix === "" ? name : `${prefix}.${name}`));
}

describe("docs/configuration.md", () => {
  const page = readFileSync(resolve(ROOT, "docs/configuration.md"), "utf8");
  const fields = fieldPaths(configSchema);

  it("has a row for every field the config accepts", () => {
    expect(fields.length).toBeGreaterThan(40);
    const rows = new Set([...page.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]));
    expect(fields.filter((field) => !rows.has(field) && !rows.has(`${field}.<name>.limits.<kind>`))).toEqual([]);
  });

  it("gives each field the default src/config.ts gives it", () => {
    const defaults: unknown = configSchema.parse({});
    const valueAt = (path: string) => path.split(".").reduce<unknown>((value, name) => (value as Record<string, unknown> | undefined)?.[name], defaults);
    const cell = (field: string) => /^\| `[^`]+` \| `?(.*?)`? \|/.exec(page.split("\n").find((line) => line.startsWith(`| \`${field}\` |`)) ?? "")?.[1];
    const wrong = fields.flatMap((field) => {
      const value = valueAt(field);
      // Records (categories, origins) default to {}: the page says what applies then.
      if (value === undefined || (typeof value === "object" && value !== null && !Array.isArray(value))) return [];
      const written = cell(field)?.replace(/\s/g, "");
      return written === JSON.stringify(value) ? [] : [`${field}: the page says ${written}, the config ${JSON.stringify(value)}`];
    });
    expect(wrong).toEqual([]);
  });
});

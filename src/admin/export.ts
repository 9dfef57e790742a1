// The chargeback export (DESIGN §8): usage_monthly rows in a range of UTC
// months as a CSV or NDJSON attachment, readable by the auditor token too.
//
// Every row is read before the first byte is written, so a D1 failure is a
// 503 (admin_unavailable), never a short or empty file. Rows come a page at a
// time by keyset pagination, which keeps each D1 answer far below its result
// size limit; each page is encoded as soon as it arrives and the body is
// sent only once the last page has. An export is capped at MAX_EXPORT_ROWS:
// past that it is a 400 naming `to`, with a hint to narrow the range.
import type { Hono } from "hono";
import { z } from "zod";
import { database } from "../db/client";
import { type UsageExportCursor, type UsageExportRow, usageExportPage } from "../db/usage-export";
import { periodOf } from "../db/usage-monthly";
import { problem } from "../errors";
import type { AdminEnv } from "./admin-env";
import { CSV_LINE_END, csvRecord } from "./csv";
import { tenantSlugSchema } from "./schemas";
import { stored } from "./storage";
import { invalid, validate } from "./validate";

/** A calendar month, `YYYY-MM`, month 01 to 12. */
export const PERIOD = /^(\d{4})-(0[1-9]|1[0-2])$/;
/** Months in one export, both ends counted: ten years. */
export const MAX_EXPORT_MONTHS = 120;
/**
 * Rows in one export. At about 60 bytes a row that is ~15 MB of body, held
 * in memory with the rows' text (the isolate has 128 MB), read in
 * MAX_EXPORT_ROWS / EXPORT_PAGE_ROWS + 1 = 26 queries (the Free plan allows
 * 50 per invocation).
 */
export const MAX_EXPORT_ROWS = 250_000;
/** Rows per D1 query: ~1 MB of result, against D1's 50 MB limit. */
export const EXPORT_PAGE_ROWS = 10_000;

export const EXPORT_FORMATS = ["csv", "ndjson"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

const CONTENT_TYPES: Readonly<Record<ExportFormat, string>> = {
  csv: "text/csv; charset=utf-8",
  ndjson: "application/x-ndjson",
};

export const CSV_HEADER = `tenant,period,metric,value${CSV_LINE_END}`;

const periodSchema = z.string().regex(PERIOD, "must be a month as YYYY-MM, month 01 to 12");

export const exportQuerySchema = z.strictObject({
  from: periodSchema.optional(),
  to: periodSchema.optional(),
  format: z.enum(EXPORT_FORMATS, "must be csv or ndjson").optional(),
  tenant: tenantSlugSchema.optional(),
});

/** Months since year 0 of a `YYYY-MM` that matched PERIOD. */
function monthIndex(period: string): number {
  return Number(period.slice(0, 4)) * 12 + Number(period.slice(5, 7)) - 1;
}

function encodeCsv(rows: readonly UsageExportRow[]): string {
  let text = "";
  for (const row of rows) text += csvRecord([row.tenant, row.period, row.metric, row.value]);
  return text;
}

function encodeNdjson(rows: readonly UsageExportRow[]): string {
  let text = "";
  for (const row of rows) text += `${JSON.stringify({ tenant: row.tenant, period: row.period, metric: row.metric, value: row.value })}\n`;
  return text;
}

const ENCODERS: Readonly<Record<ExportFormat, (rows: readonly UsageExportRow[]) => string>> = { csv: encodeCsv, ndjson: encodeNdjson };

export function registerExportRoutes(app: Hono<AdminEnv>): void {
  app.get("/usage/export", async (c) => {
    const query = validate(exportQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const from = query.value.from ?? periodOf(Date.now());
    const to = query.value.to ?? from;
    const format = query.value.format ?? "csv";
    const tenant = query.value.tenant;
    const months = monthIndex(to) - monthIndex(from) + 1;
    if (months < 1) return invalid("to", `must not be before from (${from})`);
    if (months > MAX_EXPORT_MONTHS) return invalid("to", `the range ${from} to ${to} spans ${months} months; at most ${MAX_EXPORT_MONTHS}`);

    const db = database(c.env.DB);
    const encode = ENCODERS[format];
    const parts: string[] = format === "csv" ? [CSV_HEADER] : [];
    let count = 0;
    let after: UsageExportCursor | undefined;
    for (;;) {
      // One row past the cap tells an export that fits from one that does not.
      const limit = Math.min(EXPORT_PAGE_ROWS, MAX_EXPORT_ROWS + 1 - count);
      const rows = await stored(() => usageExportPage(db, { from, to, tenant, after, limit }));
      count += rows.length;
      if (count > MAX_EXPORT_ROWS) {
        return problem("invalid_request", {
          detail: `to: the export from ${from} to ${to} has more than ${MAX_EXPORT_ROWS} rows`,
          hint: "Export a shorter range of months (an earlier `to` or a later `from`), or one tenant at a time with `tenant=`.",
          extras: { field: "to", max_rows: MAX_EXPORT_ROWS },
        });
      }
      parts.push(encode(rows));
      const last = rows[rows.length - 1];
      if (rows.length < limit || last === undefined) break;
      after = { period: last.period, tenant: last.tenant, metric: last.metric };
    }

    return new Response(new Blob(parts), {
      status: 200,
      headers: {
        "content-type": CONTENT_TYPES[format],
        "content-disposition": `attachment; filename="tollgate-usage-${from}-${to}.${format}"`,
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
      },
    });
  });
}

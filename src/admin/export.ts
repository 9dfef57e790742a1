// The chargeback export: one figure per (tenant, month,
// metric) in a range of UTC months — the metered usage_monthly value plus
// the month's reconciliation adjustments, summed — as a CSV or NDJSON
// attachment, readable by the auditor token too. Each row carries `status`:
// `final` for a finished month, `provisional` for the current one (and any
// later), whose figures still grow.
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
 * Rows in one export. At about 70 bytes a row that is ~18 MB of body, held
 * in memory with the rows' text (the isolate has 128 MB), read in about
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

export const CSV_HEADER = `tenant,period,metric,value,status${CSV_LINE_END}`;

/** `final`: a finished UTC month, whose figures no longer change; `provisional`: the current month (or a later one). */
export type RowStatus = "final" | "provisional";

function statusOf(period: string, currentPeriod: string): RowStatus {
  return period < currentPeriod ? "final" : "provisional";
}

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

function encodeCsv(rows: readonly UsageExportRow[], currentPeriod: string): string {
  let text = "";
  for (const row of rows) text += csvRecord([row.tenant, row.period, row.metric, row.value, statusOf(row.period, currentPeriod)]);
  return text;
}

function encodeNdjson(rows: readonly UsageExportRow[], currentPeriod: string): string {
  let text = "";
  for (const row of rows) {
    text += `${JSON.stringify({ tenant: row.tenant, period: row.period, metric: row.metric, value: row.value, status: statusOf(row.period, currentPeriod) })}\n`;
  }
  return text;
}

const ENCODERS: Readonly<Record<ExportFormat, (rows: readonly UsageExportRow[], currentPeriod: string) => string>> = { csv: encodeCsv, ndjson: encodeNdjson };

export function registerExportRoutes(app: Hono<AdminEnv>): void {
  app.get("/usage/export", async (c) => {
    const query = validate(exportQuerySchema, c.req.query(), "");
    if (!query.ok) return query.response;
    const currentPeriod = periodOf(Date.now());
    const from = query.value.from ?? currentPeriod;
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
      const page = await stored(() => usageExportPage(db, { from, to, tenant, after, limit: EXPORT_PAGE_ROWS }));
      count += page.rows.length;
      if (count > MAX_EXPORT_ROWS) {
        return problem("invalid_request", {
          detail: `to: the export from ${from} to ${to} has more than ${MAX_EXPORT_ROWS} rows`,
          hint: "Export a shorter range of months (an earlier `to` or a later `from`), or one tenant at a time with `tenant=`.",
          extras: { field: "to", max_rows: MAX_EXPORT_ROWS },
        });
      }
      parts.push(encode(page.rows, currentPeriod));
      if (page.next === null) break;
      after = page.next;
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

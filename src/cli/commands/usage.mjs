// @ts-check
// tollgate usage export|reconcile — the month-end jobs.
// `export` writes the chargeback file as the API sends it; `reconcile`
// compares metering with the quota objects, every page of tenants, and exits
// 1 when they drift, unless --apply corrected it.
import { writeFile } from "node:fs/promises";
import { Option } from "commander";
import { refusedError, usageError } from "../cli-error.mjs";
import { printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */
/** @typedef {{ from?: string, to?: string, format: "csv" | "ndjson", tenant?: string, output: string }} ExportOptions */

const PERIOD = /^\d{4}-(0[1-9]|1[0-2])$/;

function period(/** @type {string} */ flag, /** @type {string | undefined} */ value) {
  if (value !== undefined && !PERIOD.test(value)) throw usageError(`${flag}: not a month as YYYY-MM: '${value}'`);
  return value;
}

/** Rows in an export body: lines, less the CSV header. */
export function exportRows(/** @type {string} */ text, /** @type {"csv" | "ndjson"} */ format) {
  const lines = text.split("\n").filter((line) => line.trim() !== "").length;
  return format === "csv" ? Math.max(0, lines - 1) : lines;
}

/**
 * @typedef {object} ReconcileEntry one tenant of a reconcile answer
 * @property {string} tenant
 * @property {"drift" | "recent" | "adjusted" | "changed" | "unavailable"} status
 * @property {number} metered_bytes
 * @property {number | null} quota_bytes
 * @property {number | null} drift_bytes
 * @property {number} [wait_s] for `recent`: seconds until the drift may be applied
 */

/**
 * @typedef {object} ReconcileReport every page of POST /usage/reconcile folded into one answer
 * @property {string} metric
 * @property {boolean} apply
 * @property {number} checked tenants compared
 * @property {number} drifting tenants whose metered total differed (adjusted ones included)
 * @property {ReconcileEntry[]} tenants only those that drift or could not be checked
 * @property {null} next_cursor always null: every page was read
 */

const STATUSES = new Set(["drift", "recent", "adjusted", "changed", "unavailable"]);

/**
 * Adds one page of the reconcile answer (`{metric, apply, checked, drifting,
 * tenants, next_cursor}`) to `report`. An answer of another shape is refused
 * rather than read as "no drift".
 * @param {ReconcileReport} report
 * @param {Record<string, unknown>} body
 */
export function addReconcilePage(report, body) {
  const { checked, drifting, tenants } = body;
  if (typeof checked !== "number" || typeof drifting !== "number" || !Array.isArray(tenants)) {
    throw refusedError('POST /usage/reconcile: the answer has no "checked", "drifting" and "tenants"');
  }
  for (const entry of records(tenants)) {
    if (typeof entry.tenant !== "string" || typeof entry.status !== "string" || !STATUSES.has(entry.status)) {
      throw refusedError("POST /usage/reconcile: a tenant in the answer has no tenant or a status this CLI does not know");
    }
    report.tenants.push(/** @type {ReconcileEntry} */ (/** @type {unknown} */ (entry)));
  }
  if (typeof body.metric === "string") report.metric = body.metric;
  report.checked += checked;
  report.drifting += drifting;
}

/**
 * Why a reconcile run did not finish its job, or null when it did: drift left
 * uncorrected (a dry run), a tenant whose metering moved between the check
 * and the write (`changed`), or a quota object that did not answer.
 * @param {ReconcileReport} report
 */
export function reconcileShortfall(report) {
  const count = (/** @type {ReconcileEntry["status"]} */ status) => report.tenants.filter((t) => t.status === status).length;
  const reasons = [];
  if (count("drift") > 0) reasons.push(`drift in ${count("drift")} tenant(s), each older than the metering flush interval; run 'tollgate usage reconcile --apply' to append adjustment rows`);
  const recent = report.tenants.filter((t) => t.status === "recent");
  if (recent.length > 0) {
    const waitS = Math.max(...recent.map((t) => t.wait_s ?? 0));
    reasons.push(`${recent.length} tenant(s) stored or deleted bytes within the metering flush interval, so their drift may close by itself and was not ${report.apply ? "applied" : "counted as drift"}: wait ${waitS} s and run again`);
  }
  if (count("changed") > 0) reasons.push(`${count("changed")} tenant(s) metered more while checked and were not adjusted; run it again`);
  if (count("unavailable") > 0) reasons.push(`${count("unavailable")} tenant(s) could not be checked (quota object unavailable); run it again`);
  return reasons.length === 0 ? null : reasons.join("; ");
}

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerUsageCommands(program, runtime) {
  const usage = program.command("usage").description("export usage for chargeback, reconcile metering with the quota objects");

  usage
    .command("export")
    .description("write usage rows (tenant, period, metric, value) of a range of months")
    .option("--from <YYYY-MM>", "first month (default: this month)")
    .option("--to <YYYY-MM>", "last month (default: --from)")
    .addOption(new Option("--format <format>", "file format").choices(["csv", "ndjson"]).default("csv"))
    .option("--tenant <tenant>", "one tenant only")
    .option("-o, --output <file>", "write to this file; - for standard output", "-")
    .addHelpText("after", `
Example:
  tollgate usage export --from 2026-01 --to 2026-03 --format csv -o q1.csv`)
    .action(async (/** @type {ExportOptions} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const query = { from: period("--from", options.from), to: period("--to", options.to), format: options.format, tenant: options.tenant };
      const res = await client.call("GET", "/usage/export", { query });
      if (options.output === "-") {
        output.out(res.text);
        return;
      }
      try {
        await writeFile(options.output, res.text);
      } catch (error) {
        const code = error instanceof Error && "code" in error ? String(error.code) : "failed";
        throw refusedError(`cannot write ${options.output} (${code})`);
      }
      const rows = exportRows(res.text, options.format);
      const bytes = Buffer.byteLength(res.text);
      if (output.json) return printJson(output, { file: options.output, format: options.format, rows, bytes });
      output.out(`Wrote ${rows} row(s), ${bytes} bytes, to ${options.output}.\n`);
    });

  usage
    .command("reconcile")
    .description("compare each tenant's metered bytes_stored with its quota object; exit 1 on drift unless --apply")
    .option("--apply", "append one adjustment row per drifting tenant (never rewrites rows)")
    .option("--tenant <tenant>", "one tenant only")
    .addHelpText("after", `
A dry run exits 1 when a tenant drifts; --apply exits 0 once every drift is
adjusted. Either exits 1 when a tenant could not be checked or changed while
it was (run it again). A tenant that stored or deleted bytes within the
metering flush interval (usage.flush_interval_s, 60 s by default) is listed
as 'recent' and never adjusted: its metering may not have landed yet, and
correcting it would count the change twice. Wait the seconds it says and
run again.

Example (month end: look, then correct):
  tollgate usage reconcile && echo "no drift" || tollgate usage reconcile --apply`)
    .action(async (/** @type {{ apply?: boolean, tenant?: string }} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const apply = options.apply === true;
      /** @type {ReconcileReport} */
      const report = { metric: "bytes_stored", apply, checked: 0, drifting: 0, tenants: [], next_cursor: null };
      const query = { apply: apply ? "true" : undefined, tenant: options.tenant };
      // Each page is checked (and, with --apply, corrected) by its own call.
      for await (const body of client.pages("POST", "/usage/reconcile", query)) addReconcilePage(report, body);
      // The API checks the tenants that exist; a mistyped --tenant would otherwise read as "no drift".
      if (options.tenant !== undefined && report.checked === 0) throw refusedError(`no tenant named ${options.tenant}: nothing was checked`);
      if (output.json) printJson(output, report);
      else printReconcile(output, report);
      const shortfall = reconcileShortfall(report);
      if (shortfall !== null) throw refusedError(shortfall);
    });
}

/**
 * @param {import("../output.mjs").Output} output
 * @param {ReconcileReport} report
 */
function printReconcile(output, report) {
  if (report.tenants.length === 0) {
    output.out(`No drift: metering agrees with the quota objects of all ${report.checked} tenant(s) checked.\n`);
    return;
  }
  printTable(
    output,
    [
      ["tenant", (t) => t.tenant],
      ["status", (t) => t.status],
      ["metered bytes", (t) => t.metered_bytes],
      ["quota bytes", (t) => t.quota_bytes],
      ["drift bytes", (t) => t.drift_bytes],
    ],
    /** @type {Record<string, unknown>[]} */ (/** @type {unknown} */ (report.tenants)),
    "",
  );
  const adjusted = report.tenants.filter((t) => t.status === "adjusted").length;
  output.out(`Checked ${report.checked} tenant(s): ${report.drifting} drifting${adjusted > 0 ? `, ${adjusted} adjustment row(s) appended` : ""}.\n`);
}

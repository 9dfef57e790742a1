// @ts-check
// tollgate usage export|reconcile — the month-end jobs (DESIGN §8, §16).
// `export` writes the chargeback file as the API sends it; `reconcile`
// compares metering with the quota objects and exits 1 when they drift,
// unless --apply corrected it.
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
 * The drifting tenants of a reconcile answer, `{drift: [...]}`. An answer
 * without that list is refused rather than read as "no drift".
 * @param {Record<string, unknown>} body
 */
export function driftOf(body) {
  if (!Array.isArray(body.drift)) throw refusedError('POST /usage/reconcile: the answer has no "drift" list');
  return records(body.drift);
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
    .description("compare each tenant's metered bytes with its quota object; exit 1 on drift unless --apply")
    .option("--apply", "append one adjustment row per drifting tenant (never rewrites rows)")
    .action(async (/** @type {{ apply?: boolean }} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const apply = options.apply === true;
      const { body } = await client.json("POST", "/usage/reconcile", { query: { apply: apply ? "true" : undefined } });
      const drift = driftOf(body);
      if (output.json) printJson(output, body);
      else {
        const names = [...new Set(drift.flatMap((row) => Object.keys(row)))];
        printTable(output, names.map((name) => /** @type {const} */ ([name.replaceAll("_", " "), (row) => row[name]])), drift, "No drift: metering agrees with every quota object.");
        if (drift.length > 0 && apply) output.out(`Applied ${drift.length} adjustment row(s).\n`);
      }
      if (drift.length > 0 && !apply) throw refusedError(`drift in ${drift.length} tenant(s); run 'tollgate usage reconcile --apply' to append adjustment rows`);
    });
}

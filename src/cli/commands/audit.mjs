// @ts-check
// tollgate audit — the audit log, newest first: admin writes, sustained
// limiting, quota warnings, expired reservations. Filters by kind, tenant,
// caller (or block target) and time; follows pages up to --limit events.
import { usageError } from "../cli-error.mjs";
import { agoMs, callerArgument } from "../input.mjs";
import { cell, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */
/** @typedef {{ kind?: string, tenant?: string, caller?: string, since?: string, limit: string }} AuditOptions */

/** The API's largest page; more events are read a page at a time. */
const PAGE = 200;

/**
 * `--since` as the API takes it: an ISO 8601 time as given, or a duration
 * back from now (`30m`, `24h`, `7d`).
 * @param {string | undefined} since
 * @param {number} nowMs
 */
export function sinceArgument(since, nowMs) {
  if (since === undefined) return undefined;
  const ms = agoMs(since, nowMs);
  return ms === null ? since : new Date(ms).toISOString();
}

/**
 * An event's detail as `name=value` pairs on one line, for the table.
 * @param {unknown} detail
 */
export function detailText(detail) {
  if (typeof detail !== "object" || detail === null) return cell(detail);
  return Object.entries(detail)
    .map(([name, value]) => `${name}=${cell(value)}`)
    .join(" ");
}

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerAuditCommand(program, runtime) {
  program
    .command("audit")
    .description("show the audit log, newest first, with filters")
    .option("--kind <kind>", "one kind of event, e.g. tenant_put, key_revoked, block_added, quota_soft_exceeded")
    .option("--tenant <tenant>", "events of one tenant")
    .option("--caller <caller>", "events about one caller or block target: key:<id>, ip:<address>, net:<CIDR>, jwt:<hex>, tenant:<slug>")
    .option("--since <time>", "from this time on: ISO 8601, or a duration back from now (30m, 24h, 7d)")
    .option("--limit <n>", "at most this many events (all pages up to it)", "50")
    .addHelpText("after", `
Examples:
  tollgate audit --tenant acme --since 24h
  tollgate audit --caller net:203.0.113.0/24
  tollgate audit --kind usage_reconciled --json`)
    .action(async (/** @type {AuditOptions} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      // Digits only: Number() would also take "1e3", "0x10" or " 5".
      const limit = /^[0-9]{1,6}$/.test(options.limit) ? Number(options.limit) : Number.NaN;
      if (!Number.isInteger(limit) || limit < 1 || limit > 100_000) throw usageError(`--limit: not a whole number from 1 to 100000: '${options.limit}'`);
      const query = {
        kind: options.kind,
        tenant: options.tenant,
        caller: options.caller === undefined ? undefined : callerArgument(options.caller, runtime.err),
        since: sinceArgument(options.since, runtime.nowMs()),
        limit: String(Math.min(limit, PAGE)),
      };
      /** @type {Record<string, unknown>[]} */
      const events = [];
      /** @type {unknown} */
      let next = null;
      for await (const body of client.pages("GET", "/audit", query)) {
        events.push(...records(body.events));
        next = body.next_cursor;
        if (events.length >= limit) break;
      }
      const shown = events.slice(0, limit);
      if (output.json) return printJson(output, { events: shown });
      printTable(
        output,
        [
          ["at", (e) => e.at],
          ["kind", (e) => e.kind],
          ["actor", (e) => e.actor],
          ["tenant", (e) => e.tenant],
          ["subject", (e) => e.subject],
          ["detail", (e) => detailText(e.detail)],
        ],
        shown,
        "No audit events match.",
      );
      if (events.length > limit || (events.length === limit && next !== null && next !== undefined)) output.err(`Showing the newest ${limit}; pass --limit for more.\n`);
    });
}

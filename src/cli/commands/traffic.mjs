// @ts-check
// tollgate traffic | top-refused | shadow | alerts — who is being admitted and
// refused right now, and what the operator was told. `traffic` prints
// GET /traffic (requests per minute by decision), `top-refused` the callers
// refused most (each one `tollgate explain` accepts), `shadow` what each
// shadow policy would have refused and whom, `alerts` the recent
// alert deliveries with their state and attempts. Reading flushes the
// answering isolate's counts first; other isolates' arrive with their next
// metering flush.
import { usageError } from "../cli-error.mjs";
import { agoMs } from "../input.mjs";
import { cell, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */

/** What the API accepts (src/admin/traffic.ts): checked here too, so a mistake is a usage error that names the flag. */
const MAX_SPAN_DAYS = 31;
const MAX_TOP_REFUSED_MINUTES = 7 * 24 * 60;
const MAX_ALERTS = 200;

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * A time flag as epoch ms: ISO 8601 with a zone, or a duration ago (`90m`, `24h`, `7d`).
 * @param {string} flag
 * @param {string} value
 * @param {number} nowMs
 */
export function timeArgument(flag, value, nowMs) {
  const ago = agoMs(value, nowMs);
  if (ago !== null) return ago;
  const ms = Date.parse(value);
  if (!ISO_TIME.test(value) || Number.isNaN(ms)) throw usageError(`${flag}: not a time like 2026-12-02T10:00:00Z, nor a duration ago like 90m, 24h or 7d: '${value}'`);
  return ms;
}

/**
 * A whole number flag from 1 to `max`.
 * @param {string} flag
 * @param {string} value
 * @param {number} max
 */
function countArgument(flag, value, max) {
  if (!/^[1-9]\d*$/.test(value)) throw usageError(`${flag}: not a whole number above 0: '${value}'`);
  const n = Number(value);
  if (n > max) throw usageError(`${flag}: at most ${max}`);
  return n;
}

/** `2026-12-02T10:05Z`: a minute as people read it, still a time --from accepts. */
function minuteText(/** @type {unknown} */ iso) {
  return typeof iso === "string" ? iso.replace(/:00(\.000)?Z$/, "Z") : cell(iso);
}

/** `admitted 3, rate_limited 9`, busiest first. */
export function decisionsText(/** @type {unknown} */ decisions) {
  if (typeof decisions !== "object" || decisions === null) return "-";
  const entries = Object.entries(/** @type {Record<string, unknown>} */ (decisions)).filter((e) => typeof e[1] === "number");
  entries.sort((a, b) => Number(b[1]) - Number(a[1]) || a[0].localeCompare(b[0]));
  return entries.map(([d, n]) => `${d} ${String(n)}`).join(", ");
}

/** `2 (http_500, delivered)`: how many attempts, and what came of each. */
function attemptsText(/** @type {unknown} */ attempts) {
  const list = records(attempts);
  return list.length === 0 ? "0" : `${list.length} (${list.map((a) => cell(a.outcome)).join(", ")})`;
}

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerTrafficCommands(program, runtime) {
  program
    .command("traffic")
    .description("requests admitted and refused per minute, by decision (default: the last hour)")
    .option("--from <time>", "start: ISO 8601 (2026-12-02T10:00:00Z) or a duration ago (90m, 24h, 7d); default: an hour before --to")
    .option("--to <time>", "end, the same way; default: now")
    .option("--tenant <tenant>", "one tenant, or anonymous for requests without one; default: all, summed")
    .addHelpText("after", `
At most ${MAX_SPAN_DAYS} days at once; counts are kept traffic.retention_days (7 by default).
Only minutes with requests are listed.

Examples:
  tollgate traffic --tenant acme
  tollgate traffic --from 24h --json`)
    .action(async (/** @type {{ from?: string, to?: string, tenant?: string }} */ options, /** @type {Command} */ command) => {
      const nowMs = runtime.nowMs();
      const toMs = options.to === undefined ? undefined : timeArgument("--to", options.to, nowMs);
      const fromMs = options.from === undefined ? undefined : timeArgument("--from", options.from, nowMs);
      if (fromMs !== undefined && fromMs >= (toMs ?? nowMs)) throw usageError(`--from: must be before ${options.to === undefined ? "now" : "--to"}`);
      if (fromMs !== undefined && (toMs ?? nowMs) - fromMs > MAX_SPAN_DAYS * 86_400_000) throw usageError(`--from, --to: at most ${MAX_SPAN_DAYS} days apart`);
      const { client, output } = session(command, runtime);
      const query = { from: fromMs === undefined ? undefined : new Date(fromMs).toISOString(), to: toMs === undefined ? undefined : new Date(toMs).toISOString(), tenant: options.tenant };
      const { body } = await client.json("GET", "/traffic", { query });
      if (output.json) return printJson(output, body);
      const minutes = records(body.minutes);
      const span = `from ${minuteText(body.from)} to ${minuteText(body.to)}`;
      const whose = options.tenant === undefined ? "" : ` for ${options.tenant}`;
      printTable(
        output,
        [
          ["minute", (m) => minuteText(m.minute)],
          ["admitted", (m) => m.admitted],
          ["refused", (m) => m.refused],
          ["decisions", (m) => decisionsText(m.decisions)],
        ],
        minutes,
        `No requests counted${whose} ${span}.`,
      );
      if (minutes.length === 0) return;
      const sum = (/** @type {string} */ name) => minutes.reduce((n, m) => n + (typeof m[name] === "number" ? Number(m[name]) : 0), 0);
      output.out(`\n${sum("admitted")} admitted, ${sum("refused")} refused${whose} ${span}.\n`);
    });

  program
    .command("top-refused")
    .description("the callers refused most (default: in the last 60 minutes), each one 'tollgate explain' accepts")
    .option("--minutes <n>", `how far back, 1 to ${MAX_TOP_REFUSED_MINUTES}`, "60")
    .addHelpText("after", `
Callers are key:<id>, jwt:<hex>, tenant:<slug>, or hmac:<hex> for an address
(never the address itself). Each isolate keeps its 64 most refused callers a
minute, so a count may be over by at most OVERCOUNT.

Example:
  tollgate top-refused --minutes 15 && tollgate explain key:<id>`)
    .action(async (/** @type {{ minutes: string }} */ options, /** @type {Command} */ command) => {
      const minutes = countArgument("--minutes", options.minutes, MAX_TOP_REFUSED_MINUTES);
      const { client, output } = session(command, runtime);
      const { body } = await client.json("GET", "/traffic/top-refused", { query: { minutes: String(minutes) } });
      if (output.json) return printJson(output, body);
      const callers = records(body.callers);
      printTable(
        output,
        [
          ["caller", (c) => c.caller],
          ["tenant", (c) => c.tenant],
          ["refused", (c) => c.refused],
          ["overcount", (c) => c.overcount_at_most],
        ],
        callers,
        `No caller refused in the last ${minutes} minute(s).`,
      );
      if (callers.length > 0) output.out(`\nWhy one is refused: tollgate explain <caller>\n`);
    });

  program
    .command("shadow")
    .description("what each shadow policy (a limit, budget or block with shadow: true) would have refused, and whom (default: the last 60 minutes)")
    .option("--minutes <n>", `how far back, 1 to ${MAX_TOP_REFUSED_MINUTES}`, "60")
    .addHelpText("after", `
A policy is named as RateLimit-Policy names it (request-key-60s), budget-<category>-<owner kind>-<period>
for a budget, block-<id> or penalty:<policy> for a block. Callers are ids 'tollgate explain' accepts
(an address as hmac:<hex>). Switch a policy on by setting it again without "shadow": true.

Example:
  tollgate shadow --minutes 15`)
    .action(async (/** @type {{ minutes: string }} */ options, /** @type {Command} */ command) => {
      const minutes = countArgument("--minutes", options.minutes, MAX_TOP_REFUSED_MINUTES);
      const { client, output } = session(command, runtime);
      const { body } = await client.json("GET", "/traffic/shadow", { query: { minutes: String(minutes) } });
      if (output.json) return printJson(output, body);
      const policies = records(body.policies);
      printTable(
        output,
        [
          ["policy", (p) => p.policy],
          ["would refuse", (p) => p.would_refuse],
          ["tenants", (p) => decisionsText(p.tenants)],
          ["callers (most first)", (p) => records(p.callers).map((c) => `${cell(c.caller)} ${cell(c.would_refuse)}`).join(", ")],
        ],
        policies,
        `No shadow policy would have refused anything in the last ${minutes} minute(s).`,
      );
    });

  program
    .command("alerts")
    .description("recent alerts, newest first, with their delivery state and attempts")
    .option("--limit <n>", `how many, 1 to ${MAX_ALERTS}`, "50")
    .addHelpText("after", `
STATE is pending (queued or being retried), delivered, failed (the webhook
answered a 4xx other than 408/429 and is not asked again) or expired (still
failing 24 h after it was raised). --json has each attempt and the body sent.
Alerts are sent only when alerts.webhook_url is set.`)
    .action(async (/** @type {{ limit: string }} */ options, /** @type {Command} */ command) => {
      const limit = countArgument("--limit", options.limit, MAX_ALERTS);
      const { client, output } = session(command, runtime);
      const { body } = await client.json("GET", "/alerts", { query: { limit: String(limit) } });
      if (output.json) return printJson(output, body);
      printTable(
        output,
        [
          ["raised", (a) => a.at],
          ["type", (a) => a.type],
          ["tenant", (a) => a.tenant],
          ["state", (a) => a.state],
          ["attempts", (a) => attemptsText(a.attempts)],
          ["id", (a) => a.id],
        ],
        records(body.alerts),
        "No alerts. They are sent only when alerts.webhook_url is set.",
      );
    });
}

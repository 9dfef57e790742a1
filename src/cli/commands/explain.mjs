// @ts-check
// tollgate explain <caller> — which limits apply to a caller and why, and
// where it stands now (DESIGN §15, GET /callers/{caller_key}). Charges nothing.
import { segment } from "../admin-client.mjs";
import { printFields, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */

/** `7/60s`, `100/1s burst 200`: a Limit as people read it. */
export function limitText(/** @type {unknown} */ limit) {
  if (typeof limit !== "object" || limit === null) return "-";
  const { count, window_s: windowS, burst } = /** @type {{ count?: unknown, window_s?: unknown, burst?: unknown }} */ (limit);
  return `${String(count)}/${String(windowS)}s${burst === undefined ? "" : ` burst ${String(burst)}`}`;
}

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerExplainCommand(program, runtime) {
  program
    .command("explain")
    .description("show the limits that apply to a caller, their source and state, and any override or block")
    .argument("<caller>", "key:<id>, ip:<address or IPv6 /64>, jwt:<hex> or tenant:<slug>")
    .action(async (/** @type {string} */ caller, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("GET", `/callers/${segment(caller, "caller")}`);
      if (output.json) return printJson(output, body);
      printFields(output, [
        ["caller", body.caller],
        ["tenant", body.tenant],
        ["override", body.override],
        ["block", body.block],
      ]);
      output.out("\n");
      printTable(
        output,
        [
          ["category", (l) => l.category],
          ["subject", (l) => l.subject],
          ["source", (l) => l.source],
          ["scope", (l) => l.scope],
          ["limit", (l) => limitText(l.limit)],
          ["remaining", (l) => l.remaining],
          ["reset ms", (l) => l.reset_ms],
        ],
        records(body.limits),
        "No limits apply.",
      );
    });
}

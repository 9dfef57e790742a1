// @ts-check
// tollgate overrides ls|get|put|rm — limits for one caller key:
// `ip:<address>`, `ip:<IPv6>/64`, `key:<id>`, with an optional expiry
// and reason.
import { segment } from "../admin-client.mjs";
import { usageError } from "../cli-error.mjs";
import { expiresAt, jsonObjectArgument, limitsArgument, LIMITS_HELP } from "../input.mjs";
import { printFields, printJson, printTable, records } from "../output.mjs";
import { session } from "../session.mjs";

/** @typedef {import("commander").Command} Command */
/** @typedef {{ limits?: string, expiresAt?: string, expiresIn?: string, reason?: string, body?: string, shadow?: boolean }} PutOptions */

const CALLER_HELP = "caller key: ip:<address>, ip:<IPv6>/64 or key:<id>";

/**
 * @param {Command} program
 * @param {import("../session.mjs").Runtime} runtime
 */
export function registerOverrideCommands(program, runtime) {
  const overrides = program.command("overrides").description("limits for one caller that win over every other source");

  overrides
    .command("ls")
    .description("list every override (all pages), with whether it is active")
    .action(async (/** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const list = await client.listAll("/overrides", "overrides");
      if (output.json) return printJson(output, { overrides: list, next_cursor: null });
      printTable(
        output,
        [
          ["caller key", (o) => o.caller_key],
          ["active", (o) => o.active],
          ["shadow", (o) => o.shadow],
          ["expires", (o) => o.expires_at],
          ["reason", (o) => o.reason],
          ["limits", (o) => o.limits],
        ],
        records(list),
        "No overrides.",
      );
    });

  overrides
    .command("get")
    .description("show one caller's override")
    .argument("<caller>", CALLER_HELP)
    .action(async (/** @type {string} */ caller, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("GET", `/overrides/${segment(caller, "caller")}`);
      if (output.json) return printJson(output, body);
      printFields(output, [
        ["caller key", body.caller_key],
        ["limits", body.limits],
        ["active", body.active],
        ["shadow", body.shadow],
        ["expires", body.expires_at],
        ["reason", body.reason],
        ["updated", body.updated_at],
      ]);
    });

  overrides
    .command("put")
    .description("set (create or replace) a caller's override")
    .argument("<caller>", CALLER_HELP)
    .option("--limits <json>", "the caller's limits as JSON, or @file.json (required; shape below)")
    .option("--expires-at <time>", "ISO 8601 time it stops applying")
    .option("--expires-in <duration>", "or a duration from now: 90s, 30m, 1h, 7d")
    .option("--reason <text>", "why, for the next operator")
    .option("--shadow", "try the override: its limits are tried beside the caller's limits in force, which stay enforced; put it again without --shadow to switch it on")
    .option("--body <json>", "the whole body as JSON, or @file.json; the flags above override its fields")
    .addHelpText("after", `
${LIMITS_HELP.key}

Example (double the request rate of one key for an hour):
  tollgate overrides put key:k7m2q9x4a1bc --limits '{"request":[{"count":200,"window_s":60}]}' \\
    --expires-in 1h --reason "launch day"`)
    .action(async (/** @type {string} */ caller, /** @type {PutOptions} */ options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      /** @type {Record<string, unknown>} */
      const body = options.body === undefined ? {} : jsonObjectArgument("--body", options.body);
      if (options.limits !== undefined) body.limits = limitsArgument("--limits", options.limits, "key");
      if (body.limits === undefined) throw usageError("overrides put: --limits is required");
      const expiry = expiresAt(options, runtime.nowMs());
      if (expiry !== undefined) body.expires_at = expiry;
      if (options.reason !== undefined) body.reason = options.reason;
      if (options.shadow === true) body.shadow = true;
      const answer = await client.json("PUT", `/overrides/${segment(caller, "caller")}`, { body });
      if (output.json) return printJson(output, answer.body);
      output.out(`${answer.status === 201 ? "Created" : "Replaced"} the ${answer.body.shadow === true ? "shadow " : ""}override for ${String(answer.body.caller_key ?? caller)}.\n`);
    });

  overrides
    .command("rm")
    .description("delete a caller's override")
    .argument("<caller>", CALLER_HELP)
    .action(async (/** @type {string} */ caller, /** @type {{}} */ _options, /** @type {Command} */ command) => {
      const { client, output } = session(command, runtime);
      const { body } = await client.json("DELETE", `/overrides/${segment(caller, "caller")}`);
      if (output.json) return printJson(output, body);
      output.out(`Deleted the override for ${String(body.caller_key ?? caller)}.\n`);
    });
}

// @ts-check
// The command tree. Global flags (--url, --token, --json) are accepted before
// or after the command and shown in every command's --help. Commander's own
// errors are thrown (exitOverride), not exited on, so main.mjs maps them.
import { readFileSync } from "node:fs";
import { Command } from "commander";
import { usageError } from "./cli-error.mjs";
import { registerAuditCommand } from "./commands/audit.mjs";
import { registerBlockCommands } from "./commands/blocks.mjs";
import { registerBudgetCommands } from "./commands/budgets.mjs";
import { registerCallerCommands } from "./commands/explain.mjs";
import { registerKeyCommands } from "./commands/keys.mjs";
import { registerOrgCommands } from "./commands/orgs.mjs";
import { registerOverrideCommands } from "./commands/overrides.mjs";
import { registerTenantCommands } from "./commands/tenants.mjs";
import { registerTrafficCommands } from "./commands/traffic.mjs";
import { registerUsageCommands } from "./commands/usage.mjs";

const VERSION = /** @type {{ version: string }} */ (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"))).version;

/**
 * A command that only groups others answers a missing or unknown
 * subcommand with one line (commander would print its whole help).
 * @param {Command} group
 */
function requireSubcommand(group) {
  const path = group.parent === null ? group.name() : `${group.parent.name()} ${group.name()}`;
  group.allowExcessArguments(true).action((/** @type {{}} */ _options, /** @type {Command} */ command) => {
    const names = group.commands.map((sub) => sub.name()).filter((name) => name !== "help");
    const [first] = command.args;
    const known = `${path} ${names.join("|")}`;
    if (first === undefined) throw usageError(`missing command: ${known} (see '${path} --help')`);
    throw usageError(`unknown command '${first}': ${known} (see '${path} --help')`);
  });
}

/**
 * @param {import("./session.mjs").Runtime} runtime
 * @returns {Command}
 */
export function buildProgram(runtime) {
  const program = new Command("tollgate")
    .description("Administer a Tollgate gateway over its admin API.")
    .version(VERSION)
    .option("--url <url>", "the gateway's URL (default: $TOLLGATE_URL)")
    .option("--token <token>", "the admin token (default: $TOLLGATE_ADMIN_TOKEN)")
    .option("--json", "print the API's JSON instead of tables")
    .option("--insecure-http", "allow an http:// URL to a host other than this machine (the token then travels unencrypted)")
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({
      writeOut: runtime.out,
      writeErr: runtime.err,
      // Commander puts "(Did you mean …?)" on a second line; keep one.
      outputError: (text, write) => write(`${text.replace(/\s*\n\s*/g, " ").trim()}\n`),
    })
    .exitOverride()
    .addHelpText("after", `
Environment:
  TOLLGATE_URL            the gateway, e.g. https://gw.example.com (--url wins)
  TOLLGATE_ADMIN_TOKEN    the admin or auditor token (--token wins; prefer the variable:
                          a flag is visible to other users in the process list)

JSON bodies (--limits, --quota, --body) are given inline or as @file.json.
Exit status: 0 done, 1 refused by the gateway, unreachable, or drift found,
2 usage error.`);

  registerTenantCommands(program, runtime);
  registerKeyCommands(program, runtime);
  registerOverrideCommands(program, runtime);
  registerBlockCommands(program, runtime);
  registerOrgCommands(program, runtime);
  registerCallerCommands(program, runtime);
  registerBudgetCommands(program, runtime);
  registerUsageCommands(program, runtime);
  registerAuditCommand(program, runtime);
  registerTrafficCommands(program, runtime);

  for (const command of [program, ...program.commands]) if (command.commands.length > 0) requireSubcommand(command);
  return program;
}

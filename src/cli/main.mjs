// @ts-check
// Runs one command line and answers its exit code. Every way a run can end is
// mapped here, and nothing else reaches the terminal: commander's usage
// errors are exit 2, a CliError carries its own code, and anything unexpected
// is one line and exit 1, never a stack trace.
import { CommanderError } from "commander";
import { CliError, EXIT_OK, EXIT_REFUSED, EXIT_USAGE, oneLine } from "./cli-error.mjs";
import { buildProgram } from "./program.mjs";

/**
 * @param {readonly string[]} args the arguments after `tollgate`
 * @param {import("./session.mjs").Runtime} runtime
 * @returns {Promise<number>}
 */
export async function main(args, runtime) {
  try {
    await buildProgram(runtime).parseAsync([...args], { from: "user" });
    return EXIT_OK;
  } catch (error) {
    if (error instanceof CliError) {
      runtime.err(`error: ${oneLine(error.message)}\n`);
      return error.exitCode;
    }
    // Commander has already printed its message (or the help or version).
    if (error instanceof CommanderError) return error.exitCode === 0 ? EXIT_OK : EXIT_USAGE;
    runtime.err(`error: unexpected failure: ${oneLine(error instanceof Error ? error.message : String(error))}\n`);
    return EXIT_REFUSED;
  }
}

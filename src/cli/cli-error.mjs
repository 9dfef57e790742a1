// @ts-check
// How a command ends other than with success: an exit code and one line for
// stderr. Thrown from anywhere in a command and turned into the exit by
// main.mjs, which is the only place that writes it.

/** Exit codes: 0 done, 1 refused or drift found, 2 usage error. */
export const EXIT_OK = 0;
export const EXIT_REFUSED = 1;
export const EXIT_USAGE = 2;

export class CliError extends Error {
  /**
   * @param {number} exitCode
   * @param {string} message one line, without the `error: ` prefix
   */
  constructor(exitCode, message) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** A mistake on the command line: exit 2. */
export function usageError(/** @type {string} */ message) {
  return new CliError(EXIT_USAGE, message);
}

/** The gateway refused, could not be reached, or answered something unusable: exit 1. */
export function refusedError(/** @type {string} */ message) {
  return new CliError(EXIT_REFUSED, message);
}

/** Any text as one line: newlines and runs of spaces become one space. */
export function oneLine(/** @type {string} */ text) {
  return text.replace(/\s+/g, " ").trim();
}

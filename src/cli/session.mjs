// @ts-check
// What every command's action starts from: the admin client for the gateway
// named by --url/--token or TOLLGATE_URL/TOLLGATE_ADMIN_TOKEN (flags win),
// and the output (tables, or JSON with --json).
import { AdminClient } from "./admin-client.mjs";

/**
 * @typedef {object} Runtime the process around the CLI, passed in so a test can replace it
 * @property {Readonly<Record<string, string | undefined>>} env
 * @property {(text: string) => void} out
 * @property {(text: string) => void} err
 * @property {() => number} nowMs
 */

/**
 * @typedef {object} Session
 * @property {AdminClient} client
 * @property {import("./output.mjs").Output} output
 */

/**
 * @param {import("commander").Command} command the command being run
 * @param {Runtime} runtime
 * @returns {Session}
 */
export function session(command, runtime) {
  const globals = /** @type {{ url?: string, token?: string, json?: boolean, insecureHttp?: boolean }} */ (command.optsWithGlobals());
  const client = new AdminClient({ url: globals.url ?? runtime.env.TOLLGATE_URL, token: globals.token ?? runtime.env.TOLLGATE_ADMIN_TOKEN, insecureHttp: globals.insecureHttp === true });
  return { client, output: { out: runtime.out, err: runtime.err, json: globals.json === true } };
}

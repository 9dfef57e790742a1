// .tollgate.env: what a local run (`npm start`, `npm run dev`) keeps between
// runs, in the checkout, git-ignored. Made once and then reused: the dev
// admin and auditor tokens, and the key of tenant `dev` that `npm start`
// mints. Written as `export NAME="value"` lines, so `. ./.tollgate.env` in a
// shell sets TOLLGATE_URL and TOLLGATE_ADMIN_TOKEN for `npx tollgate`, and
// DEV_KEY for curl.
//
// wrangler gets only the two tokens, from a file of its own under .wrangler/
// (secretsFile): the key and the CLI's settings are no business of the
// Worker's, and not .dev.vars, since wrangler infers the Env type from that
// file and would then call the committed worker-configuration.d.ts out of
// date. A developer's own .dev.vars (ALERT_SECRET, say) is still passed, before
// ours, so the tokens here are the ones the Worker sees.
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

export const DEV_ENV_FILE = ".tollgate.env";
/** Where wrangler reads the tokens from (inside wrangler's own git-ignored state folder). */
export const SECRETS_FILE = join(".wrangler", "tollgate-dev-secrets.env");

const HEADER = [
  "# Made by npm start and npm run dev (scripts/lib/dev-env.mjs) and kept between runs; git-ignored.",
  "# In a shell, `. ./.tollgate.env` sets these for curl and `npx tollgate`.",
  "# ADMIN_TOKEN and AUDITOR_TOKEN are the local Worker's secrets (sign in to the console with either).",
];
/** The names written, in this order; anything else in the file is dropped when it is written again. */
const NAMES = ["TOLLGATE_URL", "TOLLGATE_ADMIN_TOKEN", "ADMIN_TOKEN", "AUDITOR_TOKEN", "DEV_KEY"];

/**
 * Reads `NAME="value"` or `export NAME="value"` lines (the older files had no
 * `export`). A value never holds a quote or a newline: every value here is
 * made by this module or by the gateway (tokens and keys are [a-z0-9_-]).
 * @param {string} text
 * @returns {Record<string, string>}
 */
export function parseDevEnv(text) {
  /** @type {Record<string, string>} */
  const values = {};
  for (const line of text.split("\n")) {
    const match = /^\s*(?:export\s+)?([A-Z_][A-Z0-9_]*)\s*=\s*"?([^"\n]*?)"?\s*$/.exec(line);
    if (match !== null && match[2] !== "") values[match[1]] = match[2];
  }
  return values;
}

/** @param {Record<string, string>} values */
export function formatDevEnv(values) {
  const lines = NAMES.filter((name) => values[name] !== undefined).map((name) => `export ${name}="${values[name]}"`);
  return `${[...HEADER, ...lines].join("\n")}\n`;
}

/** @param {string} root */
export function readDevEnv(root) {
  const file = join(root, DEV_ENV_FILE);
  return existsSync(file) ? parseDevEnv(readFileSync(file, "utf8")) : {};
}

/**
 * @param {string} root
 * @param {Record<string, string>} values
 */
export function writeDevEnv(root, values) {
  const file = join(root, DEV_ENV_FILE);
  writeFileSync(file, formatDevEnv(values), { mode: 0o600 });
  chmodSync(file, 0o600);
}

/** A token of 32+ characters (the Worker disables the admin API below that). */
function newToken(role) {
  return `dev-${role}-${randomBytes(16).toString("hex")}`;
}

/**
 * The dev tokens, made the first time and kept in .tollgate.env with the URL
 * the CLI should use for this run. Returns every value the file now holds.
 * @param {string} root
 * @param {string} gatewayUrl
 */
export function ensureDevEnv(root, gatewayUrl) {
  const values = readDevEnv(root);
  values.ADMIN_TOKEN ??= newToken("admin");
  values.AUDITOR_TOKEN ??= newToken("auditor");
  values.TOLLGATE_URL = gatewayUrl;
  values.TOLLGATE_ADMIN_TOKEN = values.ADMIN_TOKEN;
  writeDevEnv(root, values);
  return values;
}

/**
 * Writes the file wrangler reads the secrets from and answers the
 * `--env-file` arguments for wrangler dev: the developer's .dev.vars first
 * when there is one, then the tokens (later files win).
 * @param {string} root
 * @param {Record<string, string>} values
 * @returns {string[]}
 */
export function wranglerEnvFileArgs(root, values) {
  const file = join(root, SECRETS_FILE);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `ADMIN_TOKEN="${values.ADMIN_TOKEN}"\nAUDITOR_TOKEN="${values.AUDITOR_TOKEN}"\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  const ownVars = existsSync(join(root, ".dev.vars")) ? ["--env-file", ".dev.vars"] : [];
  return [...ownVars, "--env-file", SECRETS_FILE];
}

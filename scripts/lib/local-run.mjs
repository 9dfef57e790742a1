// What `npm start` and `npm run dev` share: the checkout's wrangler, the local
// D1 migrations, and a config file named on the command line or in
// TOLLGATE_CONFIG, checked before anything starts.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadConfigFile } from "./config-file.mjs";

/** @param {string} root */
export function wranglerBinOf(root) {
  return join(root, "node_modules", ".bin", "wrangler");
}

/** Prints `✗ message` and ends the process with status 1. */
export function fail(message) {
  console.error(`\n✗ ${message}`);
  process.exit(1);
}

/** Ends the process when `npm install` has not run. */
export function requireDependencies(root) {
  if (!existsSync(wranglerBinOf(root))) fail("Dependencies are missing: run `npm install` first.");
}

/**
 * Applies the D1 migrations to the local database (.wrangler/state), quietly
 * unless they fail.
 * @param {string} root
 * @param {NodeJS.ProcessEnv} env
 */
export function applyLocalMigrations(root, env) {
  const migrate = spawnSync(wranglerBinOf(root), ["d1", "migrations", "apply", "DB", "--local"], { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...env, CI: "true" }, encoding: "utf8" });
  if (migrate.status !== 0) fail(`Local D1 migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);
}

/**
 * The config file's TOLLGATE as one line of JSON, or null without a file;
 * ends the process, naming every problem, when the file is not valid.
 * @param {string} root
 * @param {string | undefined} file
 */
export async function checkedConfig(root, file) {
  if (file === undefined) return null;
  const loaded = await loadConfigFile(root, file);
  if (!loaded.ok) fail(loaded.report);
  console.log(`• ${file} is a valid config: it stands in for wrangler.toml's [vars.TOLLGATE]`);
  return loaded.json;
}

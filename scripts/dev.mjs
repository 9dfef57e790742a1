// `npm run dev`: wrangler dev on 127.0.0.1 for your own origin, with what a
// local run needs and plain `wrangler dev` lacks: the dev admin and auditor
// tokens of .tollgate.env (made the first time; without them the admin API,
// the CLI and the console answer 503 admin_disabled), the local D1
// migrations, TOLLGATE_CONFIG=<file> checked and used as the TOLLGATE
// config, and request.cf's stand-in (scripts/lib/wrangler-env.mjs).
// Every argument goes to wrangler dev as it is:
//   npm run dev -- --var ORIGIN_URL:http://127.0.0.1:3000 --port 8790
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { DEV_ENV_FILE, ensureDevEnv, wranglerEnvFileArgs } from "./lib/dev-env.mjs";
import { applyLocalMigrations, checkedConfig, requireDependencies, wranglerBinOf } from "./lib/local-run.mjs";
import { localWranglerEnv } from "./lib/wrangler-env.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const HOST = "127.0.0.1";
const DEFAULT_PORT = "8787";

/** The value of `--port N` or `--port=N` among wrangler's arguments. */
function portOf(args) {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--port") return args[i + 1] ?? DEFAULT_PORT;
    if (args[i].startsWith("--port=")) return args[i].slice("--port=".length);
  }
  return DEFAULT_PORT;
}

async function main() {
  requireDependencies(root);
  const args = process.argv.slice(2);
  const tollgateJson = await checkedConfig(root, process.env.TOLLGATE_CONFIG || undefined);
  const { env, note } = localWranglerEnv(process.env);
  applyLocalMigrations(root, env);
  const devEnv = ensureDevEnv(root, `http://${HOST}:${portOf(args)}`);
  if (note !== null) console.log(`• ${note}`);
  console.log(`• admin API and console tokens: ADMIN_TOKEN and AUDITOR_TOKEN in ${DEV_ENV_FILE} (\`. ./${DEV_ENV_FILE}\` sets them for npx tollgate)`);
  const wranglerArgs = ["dev", "--ip", HOST, "--inspector-ip", HOST, ...wranglerEnvFileArgs(root, devEnv)];
  if (tollgateJson !== null) wranglerArgs.push("--var", `TOLLGATE:${tollgateJson}`);
  const wrangler = spawn(wranglerBinOf(root), [...wranglerArgs, ...args], { cwd: root, stdio: "inherit", env });
  // Ctrl-C reaches wrangler too (same process group); end with its status.
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => wrangler.kill(signal));
  wrangler.on("exit", (code, signal) => process.exit(code ?? (signal === null ? 1 : 0)));
}

main().catch((err) => {
  console.error(`\n✗ ${err?.message ?? String(err)}`);
  process.exit(1);
});

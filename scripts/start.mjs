// `npm start`: the whole gateway on this machine, in one command.
//   0. with `--config <file>` (or TOLLGATE_CONFIG=<file>), checks that file
//      with the gateway's own validation first, and stops there if it is not
//      valid, naming every problem with its path;
//   1. applies the D1 migrations to the local database (.wrangler/state),
//   2. starts the demo origin (scripts/origin.mjs) on 127.0.0.1,
//   3. starts `wrangler dev` in front of it, on 127.0.0.1, with the dev
//      tokens of .tollgate.env (made the first time) and the config file's
//      TOLLGATE in place of wrangler.toml's when one was given,
//   4. waits until both answer, makes tenant `dev` and its key the first
//      time (later runs reuse them: scripts/lib/dev-seed.mjs), and prints a
//      curl line that works.
// Ctrl-C stops both. Ports: GATEWAY_PORT (8787) and ORIGIN_PORT (8788).
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { adminCaller, DEV_TENANT, ensureDevTenantAndKey } from "./lib/dev-seed.mjs";
import { waitForHealth } from "./lib/health-wait.mjs";
import { DEV_ENV_FILE, ensureDevEnv, wranglerEnvFileArgs, writeDevEnv } from "./lib/dev-env.mjs";
import { applyLocalMigrations, checkedConfig, fail, requireDependencies, wranglerBinOf } from "./lib/local-run.mjs";
import { localWranglerEnv } from "./lib/wrangler-env.mjs";
import { startOrigin } from "./origin.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const HOST = "127.0.0.1";
const gatewayPort = Number(process.env.GATEWAY_PORT ?? 8787);
const originPort = Number(process.env.ORIGIN_PORT ?? 8788);
const STARTUP_TIMEOUT_MS = 90_000;
const wranglerBin = wranglerBinOf(root);
const USAGE = "usage: npm start [-- --config <file.json|file.jsonc>]   (or TOLLGATE_CONFIG=<file> npm start)";

/** `--config <file>` / `--config=<file>`, else TOLLGATE_CONFIG, else none. */
function configFileArgument(args) {
  let file = process.env.TOLLGATE_CONFIG || undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--help" || arg === "-h") {
      console.log(USAGE);
      process.exit(0);
    }
    if (arg === "--config" && args[i + 1] !== undefined) file = args[++i];
    else if (arg.startsWith("--config=") && arg.length > "--config=".length) file = arg.slice("--config=".length);
    else fail(`${arg === "--config" ? "--config needs a file" : `unknown argument ${arg}`}\n  ${USAGE}`);
  }
  return file;
}

function portFree(port) {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, HOST, () => probe.close(() => resolve(true)));
  });
}

async function main() {
  requireDependencies(root);
  const tollgateJson = await checkedConfig(root, configFileArgument(process.argv.slice(2)));
  for (const [name, port] of [["GATEWAY_PORT", gatewayPort], ["ORIGIN_PORT", originPort]]) {
    if (!(await portFree(port))) fail(`Port ${port} on ${HOST} is already in use. Stop what is using it, or run with ${name}=<a free port>.`);
  }
  const { env: wranglerEnv, note } = localWranglerEnv(process.env);

  console.log("• applying D1 migrations to the local database");
  applyLocalMigrations(root, wranglerEnv);

  const origin = await startOrigin({ port: originPort, host: HOST }).catch((err) => fail(`The demo origin could not start: ${err.message}`));
  console.log(`• demo origin on http://${HOST}:${origin.port}`);

  const gatewayUrl = `http://${HOST}:${gatewayPort}`;
  const devEnv = ensureDevEnv(root, gatewayUrl);
  const originUrl = `http://${HOST}:${origin.port}`;
  if (note !== null) console.log(`• ${note}`);
  console.log(`• starting wrangler dev on ${gatewayUrl}`);
  const wranglerArgs = ["dev", "--ip", HOST, "--port", String(gatewayPort), ...wranglerEnvFileArgs(root, devEnv), "--var", `ORIGIN_URL:${originUrl}`];
  if (tollgateJson !== null) wranglerArgs.push("--var", `TOLLGATE:${tollgateJson}`);
  wranglerArgs.push("--show-interactive-dev-session=false", "--inspector-ip", HOST);
  const wrangler = spawn(wranglerBin, wranglerArgs, { cwd: root, stdio: ["ignore", "inherit", "inherit"], detached: true, env: wranglerEnv });

  let stopping = false;
  const stop = async (code) => {
    if (stopping) return;
    stopping = true;
    try {
      process.kill(-wrangler.pid, "SIGTERM");
    } catch {
      // already gone
    }
    await origin.close();
    process.exit(code);
  };
  process.on("SIGINT", () => void stop(0));
  process.on("SIGTERM", () => void stop(0));
  // Stopping `npm start` with a signal to npm alone (a supervisor, `timeout`)
  // does not reach this process: npm goes, and this one is handed to init.
  // Then stop too, so wrangler and the origin never outlive the command.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) void stop(0);
  }, 1000).unref();
  wrangler.on("exit", (code) => {
    if (!stopping) {
      console.error(`\n✗ wrangler dev exited (code ${code}).`);
      void stop(code ?? 1);
    }
  });

  const health = await waitForHealth(`${gatewayUrl}/_tollgate/health`, Date.now() + STARTUP_TIMEOUT_MS);
  if (!health.up) {
    if (health.invalid !== null) {
      const { field, message } = health.invalid;
      console.error(`\n✗ The gateway refuses its TOLLGATE config${field === undefined ? "" : ` at ${field}`}: ${message ?? "invalid"}. Fix it and start again.`);
    } else console.error(`\n✗ The gateway did not answer on ${gatewayUrl} within ${STARTUP_TIMEOUT_MS / 1000} s.`);
    return stop(1);
  }

  try {
    const seeded = await ensureDevTenantAndKey(adminCaller(gatewayUrl, devEnv.ADMIN_TOKEN), devEnv.DEV_KEY);
    if (seeded.keyMinted) writeDevEnv(root, { ...devEnv, DEV_KEY: seeded.key });
    const url = `${gatewayUrl}/hello?from=tollgate`;
    const check = await fetch(url, { headers: { authorization: `Bearer ${seeded.key}` } });
    const made = seeded.tenantCreated ? `Tenant "${DEV_TENANT}" and its key are new` : seeded.keyMinted ? `Tenant "${DEV_TENANT}" is as you left it; its key is new` : `Tenant "${DEV_TENANT}" and its key are as you left them`;
    console.log(`
Tollgate is running on ${gatewayUrl}, in front of the demo origin on ${originUrl}.
${made} (the key is DEV_KEY in ${DEV_ENV_FILE}; checked: ${check.status === 200 ? "200" : `it answered ${check.status}`}). Try:

  curl -i -H "Authorization: Bearer ${seeded.key}" "${url}"

In another terminal, \`. ./${DEV_ENV_FILE}\` sets TOLLGATE_URL, TOLLGATE_ADMIN_TOKEN and DEV_KEY for curl and npx tollgate.
Console: ${gatewayUrl}/_tollgate/console (sign in with ADMIN_TOKEN from ${DEV_ENV_FILE}, or AUDITOR_TOKEN to read only).

wrangler dev also opens workerd's debugger (the DevTools inspector) on
${HOST}:9229 (or the next free port): only this machine can reach it, and
whoever attaches can read the Worker's memory, tokens included.

Ctrl-C stops the gateway and the origin.
`);
  } catch (err) {
    console.error(`\n✗ Setting up tenant "${DEV_TENANT}" failed: ${err.message}`);
    return stop(1);
  }
}

main().catch((err) => fail(err?.message ?? String(err)));

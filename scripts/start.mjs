// `npm start`: the whole gateway on this machine, in one command.
//   1. applies the D1 migrations to the local database (.wrangler/state),
//   2. starts the demo origin (scripts/origin.mjs) on 127.0.0.1,
//   3. starts `wrangler dev` in front of it, on 127.0.0.1,
//   4. waits until both answer, seeds a dev tenant and a dev key through the
//      admin API, and prints a curl line that works.
// Ctrl-C stops both. Ports: GATEWAY_PORT (8787) and ORIGIN_PORT (8788).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startOrigin } from "./origin.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const HOST = "127.0.0.1";
const gatewayPort = Number(process.env.GATEWAY_PORT ?? 8787);
const originPort = Number(process.env.ORIGIN_PORT ?? 8788);
const STARTUP_TIMEOUT_MS = 90_000;
const wranglerBin = join(root, "node_modules", ".bin", "wrangler");

function fail(message) {
  console.error(`\n✗ ${message}`);
  process.exit(1);
}

function portFree(port) {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once("error", () => resolve(false));
    probe.listen(port, HOST, () => probe.close(() => resolve(true)));
  });
}

/**
 * The dev admin and auditor tokens live in .tollgate.env (git-ignored), made
 * once, and reach wrangler dev through --env-file. Not .dev.vars: wrangler
 * infers the Env type from that file, and would then call the committed
 * worker-configuration.d.ts out of date.
 */
export const DEV_ENV_FILE = ".tollgate.env";

function devTokens() {
  const file = join(root, DEV_ENV_FILE);
  let existing = existsSync(file) ? readFileSync(file, "utf8") : "";
  const read = (name) => existing.match(new RegExp(`^${name}\\s*=\\s*"?([^"\\n]+)"?\\s*$`, "m"))?.[1];
  const ensure = (name, prefix) => {
    const found = read(name);
    if (found) return found;
    const token = `${prefix}-${randomBytes(16).toString("hex")}`;
    existing = `${existing}${existing && !existing.endsWith("\n") ? "\n" : ""}${name}="${token}"\n`;
    writeFileSync(file, existing);
    return token;
  };
  return { admin: ensure("ADMIN_TOKEN", "dev-admin"), auditor: ensure("AUDITOR_TOKEN", "dev-auditor") };
}

async function waitFor(url, deadlineMs) {
  while (Date.now() < deadlineMs) {
    try {
      const res = await fetch(url);
      if (res.ok) return true;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

async function admin(token, method, path, body) {
  const res = await fetch(`http://${HOST}:${gatewayPort}/_tollgate/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

async function main() {
  if (!existsSync(wranglerBin)) fail("Dependencies are missing: run `npm install` first.");
  for (const [name, port] of [["GATEWAY_PORT", gatewayPort], ["ORIGIN_PORT", originPort]]) {
    if (!(await portFree(port))) fail(`Port ${port} on ${HOST} is already in use. Stop what is using it, or run with ${name}=<a free port>.`);
  }

  console.log("• applying D1 migrations to the local database");
  const migrate = spawnSync(wranglerBin, ["d1", "migrations", "apply", "DB", "--local"], { cwd: root, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, CI: "true" }, encoding: "utf8" });
  if (migrate.status !== 0) fail(`Local D1 migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);

  const origin = await startOrigin({ port: originPort, host: HOST }).catch((err) => fail(`The demo origin could not start: ${err.message}`));
  console.log(`• demo origin on http://${HOST}:${origin.port}`);

  const { admin: token } = devTokens();
  const originUrl = `http://${HOST}:${origin.port}`;
  console.log(`• starting wrangler dev on http://${HOST}:${gatewayPort}`);
  const wrangler = spawn(wranglerBin, ["dev", "--ip", HOST, "--port", String(gatewayPort), "--env-file", DEV_ENV_FILE, "--var", `ORIGIN_URL:${originUrl}`, "--show-interactive-dev-session=false", "--inspector-ip", HOST], {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
    detached: true,
  });

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

  const up = await waitFor(`http://${HOST}:${gatewayPort}/_tollgate/health`, Date.now() + STARTUP_TIMEOUT_MS);
  if (!up) {
    console.error(`\n✗ The gateway did not answer on http://${HOST}:${gatewayPort} within ${STARTUP_TIMEOUT_MS / 1000} s.`);
    return stop(1);
  }

  try {
    await admin(token, "PUT", "/tenants/dev", { limits: { request: { key: [{ count: 100, window_s: 1, burst: 200 }] } }, quota: { bytes: { soft: 800000, hard: 1000000 }, objects: { hard: 1000 } } });
    const key = await admin(token, "POST", "/tenants/dev/keys", { name: `npm start ${new Date().toISOString()}` });
    const url = `http://${HOST}:${gatewayPort}/hello?from=tollgate`;
    const check = await fetch(url, { headers: { authorization: `Bearer ${key.key}` } });
    const ok = check.status === 200;
    console.log(`
Tollgate is running on http://${HOST}:${gatewayPort}, in front of the demo origin on ${originUrl}.
Dev tenant "dev" and a fresh dev key are ready${ok ? " (checked: the gateway answered 200)" : ` (check answered ${check.status})`}. Try:

  curl -i -H "Authorization: Bearer ${key.key}" "${url}"

Admin API and console (tokens in ${DEV_ENV_FILE}: ADMIN_TOKEN, and AUDITOR_TOKEN to read only):

  curl -H "Authorization: Bearer ${token}" http://${HOST}:${gatewayPort}/_tollgate/admin/v1/tenants/dev
  console: http://${HOST}:${gatewayPort}/_tollgate/console   (open it in a browser, sign in with ADMIN_TOKEN)

wrangler dev also opens workerd's debugger (the DevTools inspector) on
${HOST}:9229 (or the next free port): only this machine can reach it, and
whoever attaches can read the Worker's memory, tokens included.

Ctrl-C stops the gateway and the origin.
`);
  } catch (err) {
    console.error(`\n✗ Seeding the dev tenant failed: ${err.message}`);
    return stop(1);
  }
}

main().catch((err) => fail(err?.message ?? String(err)));

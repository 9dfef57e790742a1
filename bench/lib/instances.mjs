// Workers under test, each in its own workerd process through Miniflare's API
// (the Miniflare that wrangler itself uses), bound to 127.0.0.1 on its own
// port, with its D1 and Durable Object storage under bench/.state/<name> (made
// fresh each run; the user's .wrangler/state is never touched), its stdout
// and stderr written to files by workerd itself (see startWorker).
//
// Why not `wrangler dev`: it puts a proxy Worker, in a second workerd process,
// in front of the Worker under test. On the 2-core machine the bare
// pass-through Worker served ~480 requests/s through `wrangler dev` and ~3,600
// through Miniflare directly; that proxy's cost would hide the gateway's.
// Tollgate still runs exactly as `wrangler deploy` would ship it: the bundle
// comes from `wrangler deploy --dry-run`.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { childPids, onCleanup, trackPid, untrackPid } from "./cleanup.mjs";

export const HOST = "127.0.0.1";
const requireHere = createRequire(import.meta.url);
const requireFromWrangler = createRequire(requireHere.resolve("wrangler/package.json"));
const { Miniflare } = await import(pathToFileURL(requireFromWrangler.resolve("miniflare")).href);
/** The WebSocket client wrangler itself depends on (Node 20 has no global WebSocket), for the inspector. */
export const WebSocketClient = (await import(pathToFileURL(requireFromWrangler.resolve("ws")).href)).default;

export const WRANGLER_ENV = { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" };

export function wranglerBin(root) {
  return join(root, "node_modules", ".bin", "wrangler");
}

export function wranglerVersion(root) {
  const out = spawnSync(wranglerBin(root), ["--version"], { cwd: root, env: WRANGLER_ENV, encoding: "utf8" });
  return (out.stdout ?? "").trim().split("\n").pop() || null;
}

/** Bundles src/index.ts exactly as `wrangler deploy` would; returns the bundle's path. */
export function buildGateway(root, outDir) {
  rmSync(outDir, { recursive: true, force: true });
  const out = spawnSync(wranglerBin(root), ["deploy", "--dry-run", "--outdir", outDir], { cwd: root, env: WRANGLER_ENV, encoding: "utf8", timeout: 120_000 });
  if (out.status !== 0) throw new Error(`wrangler deploy --dry-run failed:\n${out.stdout}\n${out.stderr}`);
  return join(outDir, "index.js");
}

/**
 * Bundles the gateway as committed at git revision `rev` (its src/,
 * wrangler.toml, package.json and migrations/, from `git archive` into a
 * temporary tree that borrows this checkout's node_modules); returns
 * {bundle, tree}. How a figure is taken from a commit while the working tree
 * is mid-edit, and how two commits are compared.
 */
export function buildGatewayAt(root, rev, outDir) {
  const tree = mkdtempSync(join(tmpdir(), "bench-tree-"));
  onCleanup(() => rmSync(tree, { recursive: true, force: true }));
  const archive = spawnSync("sh", ["-c", `git archive ${shellQuote(rev)} src wrangler.toml package.json tsconfig.json migrations | tar -x -C ${shellQuote(tree)}`], { cwd: root, encoding: "utf8" });
  if (archive.status !== 0) throw new Error(`git archive ${rev} failed: ${archive.stderr}`);
  symlinkSync(join(root, "node_modules"), join(tree, "node_modules"), "dir");
  return { bundle: buildGateway(tree, outDir), tree };
}

/** compatibility_date and compatibility_flags from wrangler.toml, so the bench runs what the deployment runs. */
export function readCompatibility(root) {
  const toml = readFileSync(join(root, "wrangler.toml"), "utf8");
  const date = toml.match(/^compatibility_date\s*=\s*"([^"]+)"/m)?.[1];
  const flags = toml.match(/^compatibility_flags\s*=\s*\[([^\]]*)\]/m)?.[1];
  if (!date) throw new Error("wrangler.toml has no compatibility_date");
  return {
    compatibilityDate: date,
    compatibilityFlags: flags ? [...flags.matchAll(/"([^"]+)"/g)].map((m) => m[1]) : [],
  };
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, HOST, () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts one Worker in its own workerd. opts: {name, scriptPath, bindings,
 * compat, gateway: boolean (D1 DB + TENANT_QUOTA), stateDir, extra (more
 * Miniflare options, e.g. inspectorPort), stdout (a file for workerd's
 * stdout, default /dev/null), cpu (a CPU list for `taskset -c`, e.g. "0";
 * default: not pinned)}. Returns {name, url, port, pid, mf, stdoutPath,
 * stderrTail, stop()}.
 *
 * workerd's stdout and stderr are files, opened by a wrapper script before
 * it execs workerd (MINIFLARE_WORKERD_PATH), so the request log goes
 * straight to the file at the descriptor level: no pipe, and no reader in
 * this process, as a deployed Worker has none (Miniflare's
 * handleRuntimeStdio would pipe every line through this process's event
 * loop, the one that drives the load). Requests reach the Worker through a
 * direct socket (unsafeDirectSockets), not through Miniflare's entry Worker,
 * so nothing but the Worker under test runs JavaScript per request.
 */
export async function startWorker({ name, scriptPath, bindings, compat, gateway, stateDir, extra = {}, stdout = "/dev/null", cpu = null }) {
  const storage = gateway
    ? {
        d1Databases: { DB: `bench-${name}` },
        durableObjects: { TENANT_QUOTA: { className: "TenantQuota", useSQLite: true } },
        d1Persist: join(stateDir, "d1"),
        durableObjectsPersist: join(stateDir, "do"),
      }
    : {};
  if (gateway) {
    rmSync(stateDir, { recursive: true, force: true });
    mkdirSync(stateDir, { recursive: true });
  }
  const wrapperDir = mkdtempSync(join(tmpdir(), `bench-workerd-${name}-`));
  const stderrPath = join(wrapperDir, "stderr");
  const wrapper = join(wrapperDir, "workerd");
  const pin = cpu === null ? "" : `taskset -c ${cpu} `;
  writeFileSync(wrapper, `#!/bin/sh\nexec ${pin}${shellQuote(workerdBinary())} "$@" >${shellQuote(stdout)} 2>${shellQuote(stderrPath)}\n`, { mode: 0o755 });
  // One start at a time: Miniflare reads MINIFLARE_WORKERD_PATH when it spawns workerd.
  const previous = starting;
  let release;
  starting = new Promise((resolve) => (release = resolve));
  await previous;
  const before = new Set(childPids("workerd"));
  let mf;
  let url;
  const savedPath = process.env.MINIFLARE_WORKERD_PATH;
  try {
    process.env.MINIFLARE_WORKERD_PATH = wrapper;
    mf = new Miniflare({
      name,
      host: HOST,
      port: 0,
      modules: true,
      // Imported .js files are ES modules too (Miniflare would read them as CommonJS).
      modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
      scriptPath,
      ...compat,
      bindings,
      ...storage,
      unsafeDirectSockets: [{ host: HOST, port: 0 }],
      ...extra,
    });
    await mf.ready;
    url = await mf.unsafeGetDirectURL(name);
  } finally {
    if (savedPath === undefined) delete process.env.MINIFLARE_WORKERD_PATH;
    else process.env.MINIFLARE_WORKERD_PATH = savedPath;
    release();
  }
  // taskset execs workerd in place, so the child is workerd either way.
  const pids = childPids("workerd").filter((pid) => !before.has(pid));
  for (const pid of pids) trackPid(pid);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await mf.dispose().catch(() => {});
    for (const pid of pids) untrackPid(pid);
    rmSync(wrapperDir, { recursive: true, force: true });
  };
  const unregister = onCleanup(stop);
  return {
    name,
    url: url.origin,
    port: Number(url.port),
    pid: pids[0] ?? null,
    mf,
    stdoutPath: stdout,
    /** The last lines workerd wrote to stderr. */
    get stderrTail() {
      try {
        return readFileSync(stderrPath, "utf8").split("\n").slice(-40);
      } catch {
        return [];
      }
    },
    stop: async () => {
      unregister();
      await stop();
    },
  };
}

let starting = Promise.resolve();

/** The workerd binary Miniflare itself would run. */
function workerdBinary() {
  return createRequire(requireFromWrangler.resolve("miniflare"))("workerd").default;
}

function shellQuote(text) {
  return `'${String(text).replaceAll("'", "'\\''")}'`;
}

/** Applies migrations/*.sql (drizzle-kit's output, split at its statement breakpoints) to the Worker's D1. */
export async function applyMigrations(root, worker) {
  const db = await worker.mf.getD1Database("DB");
  const dir = join(root, "migrations");
  const files = readdirSync(dir).filter((f) => f.endsWith(".sql")).sort();
  for (const file of files) {
    const statements = readFileSync(join(dir, file), "utf8")
      .split("--> statement-breakpoint")
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    await db.batch(statements.map((s) => db.prepare(s)));
  }
  return files;
}

/** VmRSS and VmHWM of a process, in KiB, from /proc/<pid>/status. */
export function memoryOf(pid) {
  if (pid === null) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (field) => Number(status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"))?.[1] ?? NaN);
    return { rss_kib: kib("VmRSS"), hwm_kib: kib("VmHWM") };
  } catch {
    return null;
  }
}

export async function waitHealthy(url, deadlineMs = 30_000) {
  const until = Date.now() + deadlineMs;
  let last = null;
  while (Date.now() < until) {
    try {
      const res = await fetch(`${url}/_tollgate/health`);
      last = await res.json();
      if (res.ok && last.config === undefined) return last;
      if (last.config === "invalid") throw new Error(`TOLLGATE config is invalid: ${JSON.stringify(last.error)}`);
    } catch (err) {
      if (String(err?.message).startsWith("TOLLGATE")) throw err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not become healthy (${JSON.stringify(last)})`);
}

/** One admin API call; throws with the answer on any non-2xx. */
export async function admin(url, token, method, path, body) {
  const res = await fetch(`${url}/_tollgate/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`admin ${method} ${path} answered ${res.status}: ${text}`);
  return JSON.parse(text);
}

/** Creates a tenant with `tenantBody` and mints one key; returns the key string. */
export async function seedTenantAndKey(url, token, tenant, tenantBody, keyName) {
  await admin(url, token, "PUT", `/tenants/${tenant}`, tenantBody);
  const minted = await admin(url, token, "POST", `/tenants/${tenant}/keys`, { name: keyName });
  return minted.key;
}

// The whole gateway as an operator runs it, for end-to-end tests in Node: a
// fresh local D1 (migrations applied), the recording origin, and
// `wrangler dev` on 127.0.0.1 with admin and auditor tokens made for this
// run. `startGateway()` is what the e2e project's global setup calls once;
// a test reads the result with `gateway()` from ./fixture.ts.
//
// The TOLLGATE config is wrangler.toml's, with `E2E_TOLLGATE` merged over it
// (usage flushed every second, so metering shows up in D1 while a test
// waits; the admin token's limit lifted, since every e2e file shares the one
// token and the default 10/s would throttle files running side by side; a
// test may ask for more with `startGateway({ tollgate })`).
//
// The tokens go to wrangler in an env file inside the temporary state
// directory (never in git, never on a command line that `ps` shows); passing
// `--env-file` also keeps a developer's own .dev.vars out of the run.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startOrigin } from "../../scripts/origin.mjs";
import { withStartSlot } from "./start-slots";

/** What a test needs to reach the running gateway. */
export interface GatewayInfo {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  gatewayUrl: string;
  /** 32+ characters: the admin API is enabled. */
  adminToken: string;
  /** 32+ characters: reads only. */
  auditorToken: string;
  /** The recording origin the gateway forwards to (GET /__origin/requests?tag=). */
  originUrl: string;
  /** wrangler's `--persist-to` directory (the local D1 and Durable Objects), for `executeLocalD1`. */
  stateDir: string;
}

export interface RunningGateway extends GatewayInfo {
  /** From the first step (the temporary directory) to the first healthy answer. */
  startupMs: number;
  /** Stops wrangler (its whole process group) and the origin, removes the state. Safe to call twice. */
  stop(): Promise<void>;
}

const HOST = "127.0.0.1";
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const WRANGLER = join(ROOT, "node_modules", ".bin", "wrangler");
/** A cold `wrangler dev` on this 2-core machine takes ~5 s; leave room for a busy one. */
const DEFAULT_STARTUP_TIMEOUT_MS = 120_000;
const HEALTH_POLL_MS = 200;
/** How long wrangler gets to exit on SIGTERM before SIGKILL. */
const STOP_GRACE_MS = 5_000;
/** The tail of wrangler's output kept for an error message. */
const MAX_LOG_CHARS = 8_000;

/** Fields merged over wrangler.toml's TOLLGATE for every e2e run. */
export const E2E_TOLLGATE: Readonly<Record<string, unknown>> = {
  usage: { flush_interval_s: 1 },
  categories: { admin: { limits: { admin: [{ count: 10_000, window_s: 1 }] } } },
};

interface Origin {
  port: number;
  close(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, HOST, () => {
      const address = probe.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

function token(role: string): string {
  return `e2e-${role}-${randomBytes(24).toString("hex")}`;
}

/** Keeps the last MAX_LOG_CHARS of a child's output (and drains its pipes). */
function captureOutput(child: ChildProcess): () => string {
  let log = "";
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString("utf8")).slice(-MAX_LOG_CHARS);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  return () => log;
}

function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** Applies the migrations to a fresh state directory; killed (and an error with its output) past the deadline. */
async function applyMigrations(stateDir: string, deadlineMs: number): Promise<void> {
  const child = spawn(WRANGLER, ["d1", "migrations", "apply", "DB", "--local", "--persist-to", stateDir], {
    cwd: ROOT,
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = captureOutput(child);
  const timer = setTimeout(() => child.kill("SIGKILL"), Math.max(0, deadlineMs - Date.now()));
  const code = await exited(child);
  clearTimeout(timer);
  if (code !== 0) throw new Error(`wrangler d1 migrations apply failed (${code === null ? "killed at the start deadline" : `exit ${code}`}):\n${output()}`);
}

/**
 * Runs SQL on the running gateway's local D1, as an operator would with
 * `wrangler d1 execute DB --local --persist-to <dir>`, and answers the rows
 * of each statement. For tests that must change what only the Worker writes
 * (a metering row removed to make drift). Spawned, not spawnSync: blocking
 * the event loop for seconds lets the gateway close this process's idle
 * keep-alive sockets unnoticed, and the next fetch fails.
 */
export async function executeLocalD1(stateDir: string, sql: string): Promise<Array<Record<string, unknown>[]>> {
  // The gateway holds the same SQLite file: a write of its own (metering, traffic) can make this one
  // meet SQLITE_BUSY, so a busy database is asked again a few times before it counts as a failure.
  for (let attempt = 1; ; attempt++) {
    const child = spawn(WRANGLER, ["d1", "execute", "DB", "--local", "--persist-to", stateDir, "--json", "--command", sql], {
      cwd: ROOT,
      env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    const output = captureOutput(child);
    const code = await exited(child);
    if (code !== 0) {
      const text = `${stdout}\n${output()}`;
      if (attempt < D1_BUSY_ATTEMPTS && /SQLITE_BUSY|database is locked/.test(text)) {
        await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
        continue;
      }
      throw new Error(`wrangler d1 execute failed (exit ${code}):\n${text}`);
    }
    const results = JSON.parse(stdout) as Array<{ results: Record<string, unknown>[]; success: boolean }>;
    return results.map((r) => r.results);
  }
}

/** How many times executeLocalD1 asks a database the gateway holds busy. */
const D1_BUSY_ATTEMPTS = 5;

/** wrangler.toml's TOLLGATE object with `overrides` merged over it (top-level fields replaced). */
async function tollgateConfig(overrides: Readonly<Record<string, unknown>>): Promise<string> {
  const { unstable_readConfig } = await import("wrangler");
  const vars = unstable_readConfig({ config: join(ROOT, "wrangler.toml") }).vars as Record<string, unknown>;
  const base = typeof vars.TOLLGATE === "object" && vars.TOLLGATE !== null ? vars.TOLLGATE : {};
  return JSON.stringify({ ...base, ...overrides });
}

/** Signals wrangler's whole group (workerd included), even when wrangler itself has already exited. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}

export interface StartOptions {
  /** From holding a start slot to the first healthy answer; DEFAULT_STARTUP_TIMEOUT_MS if absent. */
  timeoutMs?: number;
  /** Merged over wrangler.toml's TOLLGATE (after E2E_TOLLGATE). */
  tollgate?: Readonly<Record<string, unknown>>;
  /** More secrets for the Worker (ALERT_SECRET, say). */
  secrets?: Readonly<Record<string, string>>;
}

/**
 * Starts origin and gateway on free ports with a fresh state directory and
 * resolves once `/_tollgate/health` answers 200. On any failure everything
 * started so far is stopped before the error (with wrangler's output) is thrown.
 */
export async function startGateway(options: StartOptions = {}): Promise<RunningGateway> {
  // Waits for one of the start slots (./start-slots.ts): the timeout counts from holding one.
  return withStartSlot("gateway", () => startHoldingSlot(options));
}

async function startHoldingSlot(options: StartOptions): Promise<RunningGateway> {
  const startedAtMs = Date.now();
  const deadlineMs = startedAtMs + (options.timeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS);
  const stateDir = await mkdtemp(join(tmpdir(), "tollgate-e2e-"));
  let origin: Origin | undefined;
  let wrangler: ChildProcess | undefined;
  // If the test runner exits without calling stop() (Ctrl-C), wrangler must
  // not outlive it, nor its state directory.
  const onExit = () => {
    if (wrangler !== undefined) killGroup(wrangler, "SIGKILL");
    rmSync(stateDir, { recursive: true, force: true });
  };
  process.once("exit", onExit);

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (wrangler !== undefined) {
      const gone = exited(wrangler);
      killGroup(wrangler, "SIGTERM");
      const timer = setTimeout(() => wrangler !== undefined && killGroup(wrangler, "SIGKILL"), STOP_GRACE_MS);
      await gone;
      clearTimeout(timer);
      // Anything of the group still alive once wrangler is gone (ESRCH is ignored).
      killGroup(wrangler, "SIGKILL");
    }
    process.off("exit", onExit);
    await origin?.close();
    await rm(stateDir, { recursive: true, force: true });
  };

  try {
    await applyMigrations(stateDir, deadlineMs);
    origin = (await startOrigin({ port: 0, host: HOST })) as Origin;
    const originUrl = `http://${HOST}:${origin.port}`;
    const adminToken = token("admin");
    const auditorToken = token("auditor");
    const envFile = join(stateDir, "e2e.env");
    const secrets = Object.entries(options.secrets ?? {}).map(([name, value]) => `${name}="${value}"\n`);
    await writeFile(envFile, [`ADMIN_TOKEN="${adminToken}"\n`, `AUDITOR_TOKEN="${auditorToken}"\n`, ...secrets].join(""), { mode: 0o600 });
    const tollgate = await tollgateConfig({ ...E2E_TOLLGATE, ...options.tollgate });
    // A free port can be taken between the probe and wrangler's bind (another
    // process listening, or an outgoing connection given that local port):
    // wrangler then exits at once saying so, and the start is tried again on
    // other ports.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const inspectorPort = await freePort();
      wrangler = spawn(
        WRANGLER,
        [
          "dev",
          "--ip", HOST,
          "--port", String(port),
          "--inspector-port", String(inspectorPort),
          "--persist-to", stateDir,
          "--env-file", envFile,
          "--var", `ORIGIN_URL:${originUrl}`,
          "--var", `TOLLGATE:${tollgate}`,
          "--show-interactive-dev-session=false",
        ],
        { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
      );
      const output = captureOutput(wrangler);
      const gatewayUrl = `http://${HOST}:${port}`;
      try {
        await waitForHealth(gatewayUrl, wrangler, deadlineMs, output);
      } catch (error) {
        if (attempt < PORT_ATTEMPTS && error instanceof WranglerExited && /Address already in use/.test(output())) {
          killGroup(wrangler, "SIGKILL"); // anything of that group still alive
          continue;
        }
        throw error;
      }
      return { gatewayUrl, adminToken, auditorToken, originUrl, stateDir, startupMs: Date.now() - startedAtMs, stop };
    }
  } catch (error) {
    await stop();
    throw error;
  }
}

/** How many times a start is tried when wrangler finds its port taken. */
const PORT_ATTEMPTS = 3;

class ConfigInvalid extends Error {}
class WranglerExited extends Error {}

async function waitForHealth(gatewayUrl: string, child: ChildProcess, deadlineMs: number, output: () => string): Promise<void> {
  while (Date.now() < deadlineMs) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new WranglerExited(`wrangler dev exited (${child.exitCode ?? child.signalCode}) before the gateway answered:\n${output()}`);
    }
    try {
      const res = await fetch(`${gatewayUrl}/_tollgate/health`, { signal: AbortSignal.timeout(2_000) });
      // An invalid config answers 503 with the error.
      const health = res.ok || res.status === 503 ? ((await res.json()) as { config?: string; error?: unknown }) : null;
      if (health?.config === "invalid") throw new ConfigInvalid(`The gateway's TOLLGATE config is invalid: ${JSON.stringify(health.error)}\n${output()}`);
      if (health !== null) return;
    } catch (error) {
      if (error instanceof ConfigInvalid) throw error;
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, HEALTH_POLL_MS));
  }
  throw new Error(`The gateway did not answer ${gatewayUrl}/_tollgate/health in time:\n${output()}`);
}

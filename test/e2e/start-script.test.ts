// `npm start` and `npm run dev` as a newcomer runs them, in a throwaway
// checkout (so the developer's own .tollgate.env and local D1 are left
// alone), on free ports:
// - a config file is checked first with the gateway's validation: every
//   problem named with its path, exit 1, nothing started;
// - a valid one is what the gateway runs with, and the first start ends with
//   the lines the README's quick start quotes, a curl line that works, and no
//   stack trace about workers.cloudflare.com;
// - a second start leaves tenant `dev` as the operator left it and reuses its
//   key (no tenant_replaced, one key_minted in all);
// - `npm run dev` gives the Worker the dev tokens, so the admin API answers.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDevEnv } from "../../scripts/lib/dev-env.mjs";
import { type Checkout, makeCheckout, readerEnv, ROOT } from "./checkout";
import { firstFenceUnder, matchClaims, plainOutput } from "./doc-examples";
import { withStartSlot } from "./start-slots";

const HOST = "127.0.0.1";
const READY_TIMEOUT_MS = 120_000;
/** A start test: a start slot's wait (./start-slots.ts), the start, what the test does with it. */
const START_TEST_TIMEOUT_MS = READY_TIMEOUT_MS + 120_000;

let checkout: Checkout;
const running = new Set<ChildProcess>();

beforeAll(() => {
  checkout = makeCheckout("tollgate-start-");
});

afterAll(async () => {
  await Promise.all([...running].map((child) => stopChild(child)));
  checkout?.remove();
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, HOST, () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

interface Finished {
  code: number | null;
  output: string;
}

/** Runs a command in the checkout to its end. */
function runToEnd(command: string, args: readonly string[], env: Record<string, string> = {}): Promise<Finished> {
  return new Promise((resolve) => {
    execFile(command, [...args], { cwd: checkout.dir, env: readerEnv(env), timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : 1, output: plainOutput(`${stdout}${stderr}`) });
    });
  });
}

interface Started {
  child: ChildProcess;
  output: () => string;
}

/**
 * Starts a long-running script in the checkout and resolves once its output
 * holds `ready`, holding one of the start slots (./start-slots.ts) until then.
 */
function startUntil(args: readonly string[], env: Record<string, string>, ready: RegExp): Promise<Started> {
  return withStartSlot("gateway", () => startHoldingSlot(args, env, ready));
}

function startHoldingSlot(args: readonly string[], env: Record<string, string>, ready: RegExp): Promise<Started> {
  const child = spawn(process.execPath, [...args], { cwd: checkout.dir, env: readerEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  running.add(child);
  let text = "";
  const output = () => plainOutput(text);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready within ${READY_TIMEOUT_MS} ms:\n${output()}`)), READY_TIMEOUT_MS);
    const take = (chunk: Buffer) => {
      text += chunk.toString("utf8");
      if (ready.test(output())) {
        clearTimeout(timer);
        resolve({ child, output });
      }
    };
    child.stdout?.on("data", take);
    child.stderr?.on("data", take);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code}) before it was ready:\n${output()}`));
    });
  });
}

/** Ctrl-C, as a reader stops it; waits for the script (and the wrangler it stops) to end. */
async function stopChild(child: ChildProcess): Promise<void> {
  running.delete(child);
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGINT");
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await gone;
  clearTimeout(timer);
}

function devEnv(): Record<string, string> {
  return parseDevEnv(readFileSync(join(checkout.dir, ".tollgate.env"), "utf8"));
}

async function admin(gatewayUrl: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gatewayUrl}/_tollgate/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

describe("npm start -- --config <file>", () => {
  it("names every problem of an invalid file with its path, exits 1 and starts nothing", async () => {
    writeFileSync(
      join(checkout.dir, "wrong.jsonc"),
      '{\n  // two mistakes and a field that does not exist\n  "mode": "strict",\n  "limiter": { "max_memory_mib": 100 },\n  "routes": [{ "path": "/login", "charge_on_status": [401, "6xx"] }],\n  "colour": "blue",\n}\n',
    );
    const run = await runToEnd("npm", ["start", "--", "--config", "wrong.jsonc"]);
    expect(run.code).toBe(1);
    expect(run.output).toContain("✗ wrong.jsonc is not a valid TOLLGATE config (4 problems):");
    expect(run.output).toMatch(/^ {2}mode: .*"enforce"\|"shadow"\|"off"/m);
    expect(run.output).toContain("  limiter.max_memory_mib: must be <= 64 (an isolate has 128 MB)");
    expect(run.output).toContain("  routes.0.charge_on_status.1: must be a status code");
    expect(run.output).toContain("  colour: ");
    expect(run.output).not.toContain("applying D1 migrations");
    expect(existsSync(join(checkout.dir, ".tollgate.env"))).toBe(false);
  }, 60_000);

  it("reads TOLLGATE_CONFIG the same way, and says where JSON breaks", async () => {
    writeFileSync(join(checkout.dir, "broken.json"), '{\n  "mode": "shadow",\n  "anonymous": \n}\n');
    const run = await runToEnd(process.execPath, ["scripts/start.mjs"], { TOLLGATE_CONFIG: "broken.json" });
    expect(run.code).toBe(1);
    expect(run.output).toContain('✗ broken.json: not valid JSON at line 4, column 1: unexpected "}"');
    const missing = await runToEnd(process.execPath, ["scripts/start.mjs", "--config", "nowhere.jsonc"]);
    expect(missing.code).toBe(1);
    expect(missing.output).toContain("✗ nowhere.jsonc: cannot be read (no such file)");
  }, 60_000);
});

describe("npm start, the first time and the next", () => {
  let gatewayUrl = "";
  let originPort = 0;

  it("starts with a valid config file and ends as the README's quick start says, with a curl line that works", async () => {
    const gatewayPort = await freePort();
    originPort = await freePort();
    gatewayUrl = `http://${HOST}:${gatewayPort}`;
    // Shadow mode: a made-up key is forwarded, marked, so the file is visibly the config in force.
    writeFileSync(join(checkout.dir, "local.jsonc"), '{\n  "mode": "shadow", // check everything, refuse nothing\n  "routes": [{ "method": "PUT", "path": "/objects/:object", "charges": { "upload": 1 }, "quota": "store" },],\n}\n');
    const started = await startUntil(["scripts/start.mjs", "--config", "local.jsonc"], { GATEWAY_PORT: String(gatewayPort), ORIGIN_PORT: String(originPort) }, /Ctrl-C stops the gateway/);
    try {
      const printed = started.output();
      expect(printed).toContain("• local.jsonc is a valid config: it stands in for wrangler.toml's [vars.TOLLGATE]");
      // The README's block, with this run's ports for npm start's defaults.
      const quoted = firstFenceUnder(readFileSync(join(ROOT, "README.md"), "utf8"), "## Quick start");
      expect(quoted).not.toBeNull();
      const claimed = quoted!.replaceAll("127.0.0.1:8787", `${HOST}:${gatewayPort}`).replaceAll("127.0.0.1:8788", `${HOST}:${originPort}`);
      const result = matchClaims({ output: { lang: "", text: claimed, line: 0 }, arrows: [] }, printed);
      expect(result.ok ? "" : result.reason, printed).toBe("");
      // wrangler's fetch of request.cf is off: one line says so, and no stack trace is printed.
      expect(printed).toContain("• request.cf is wrangler's stand-in");
      expect(printed).not.toMatch(/ENOTFOUND|getaddrinfo|workers\.cloudflare\.com\/cf\.json/);

      const key = /Authorization: Bearer (tg_\w+)/.exec(printed)?.[1];
      expect(key).toBe(devEnv().DEV_KEY);
      const hello = await fetch(`${gatewayUrl}/hello?from=tollgate`, { headers: { authorization: `Bearer ${key}` } });
      expect(hello.status).toBe(200);
      const madeUp = await fetch(`${gatewayUrl}/hello`, { headers: { authorization: "Bearer tg_madeup" } });
      expect(madeUp.headers.get("tollgate-shadow")).toBe("invalid_credential");

      // The operator changes tenant dev; the next start must leave it so.
      const env = devEnv();
      expect(env.TOLLGATE_URL).toBe(gatewayUrl);
      const set = await admin(gatewayUrl, env.ADMIN_TOKEN!, "PUT", "/tenants/dev/limits", { limits: { request: { key: [{ count: 7, window_s: 1 }] } } });
      expect(set.status).toBe(200);
    } finally {
      await stopChild(started.child);
    }
  }, START_TEST_TIMEOUT_MS);

  it("a second start leaves tenant dev as it was left and reuses its key", async () => {
    expect(gatewayUrl).not.toBe("");
    const before = devEnv();
    const started = await startUntil(["scripts/start.mjs"], { GATEWAY_PORT: new URL(gatewayUrl).port, ORIGIN_PORT: String(originPort) }, /Ctrl-C stops the gateway/);
    try {
      expect(started.output()).toContain(`Tenant "dev" and its key are as you left them (the key is DEV_KEY in .tollgate.env; checked: 200)`);
      expect(started.output()).toContain(`Authorization: Bearer ${before.DEV_KEY}`);
      expect(devEnv()).toEqual(before);
      const tenant = await admin(gatewayUrl, before.ADMIN_TOKEN!, "GET", "/tenants/dev");
      expect(tenant.body.limits).toEqual({ request: { key: [{ count: 7, window_s: 1 }] } });
      const audit = await admin(gatewayUrl, before.ADMIN_TOKEN!, "GET", "/audit?tenant=dev&limit=200");
      const kinds = (audit.body.events as { kind: string }[]).map((e) => e.kind);
      expect(kinds.filter((k) => k === "key_minted")).toHaveLength(1);
      expect(kinds.filter((k) => k === "tenant_created")).toHaveLength(1);
      expect(kinds).not.toContain("tenant_replaced");
    } finally {
      await stopChild(started.child);
    }
  }, START_TEST_TIMEOUT_MS);
});

describe("npm run dev", () => {
  it("gives the Worker the dev tokens of .tollgate.env, so the admin API answers", async () => {
    const port = await freePort();
    const started = await startUntil(["scripts/dev.mjs", "--port", String(port), "--inspector-port", String(await freePort())], {}, /Ready on http/);
    try {
      const env = devEnv();
      expect(env.TOLLGATE_URL).toBe(`http://${HOST}:${port}`);
      const listed = await admin(`http://${HOST}:${port}`, env.ADMIN_TOKEN!, "GET", "/tenants?limit=1");
      expect(listed.status).toBe(200);
      expect(started.output()).toContain("• admin API and console tokens: ADMIN_TOKEN and AUDITOR_TOKEN in .tollgate.env");
      expect(started.output()).not.toMatch(/ENOTFOUND|getaddrinfo/);
    } finally {
      await stopChild(started.child);
    }
  }, START_TEST_TIMEOUT_MS);
});

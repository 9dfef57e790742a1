// `npm run deploy` (scripts/deploy.mjs) on a fresh account and on one that
// has the database already, run against a stand-in wrangler (a small Node
// script that answers as wrangler does and records every call) and a copy of
// wrangler.toml, so no account is needed. The real wrangler's side is
// checked by `node scripts/deploy.mjs --dry-run` and `npm run deploy:check`,
// which .ci/run runs on every submission.
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const NEW_ID = "1f0e2d3c-4b5a-4968-8776-a5b4c3d2e1f0";

// Answers by the first words of the command line; FAKE_STATE says how the account looks.
const FAKE_WRANGLER = `#!/usr/bin/env node
const fs = require("node:fs");
const args = process.argv.slice(2);
const state = JSON.parse(process.env.FAKE_STATE);
fs.appendFileSync(process.env.FAKE_LOG, JSON.stringify(args) + "\\n");
const cmd = args.filter((a) => !a.startsWith("--") && !a.endsWith(".toml")).slice(0, 3).join(" ");
if (cmd === "whoami") { console.log(state.loggedIn ? "You are logged in with an API Token" : "You are not authenticated."); process.exit(0); }
if (cmd.startsWith("d1 list")) { console.log(JSON.stringify(state.databases)); process.exit(0); }
if (cmd.startsWith("d1 create")) { console.log('[[d1_databases]]\\nbinding = "DB"\\ndatabase_name = "tollgate"\\ndatabase_id = "${NEW_ID}"'); process.exit(0); }
if (cmd.startsWith("d1 migrations apply")) { console.log(state.migrationsFail ? "migration failed" : "Migrations applied"); process.exit(state.migrationsFail ? 1 : 0); }
if (cmd.startsWith("queues info")) { process.exit(state.queueExists ? 0 : 1); }
if (cmd.startsWith("queues create")) { console.log("Created queue"); process.exit(0); }
if (cmd === "deploy") { console.log("Uploaded tollgate\\nDeployed tollgate triggers\\n  https://tollgate.example-account.workers.dev"); process.exit(0); }
if (cmd.startsWith("secret list")) { console.log(JSON.stringify(state.secrets)); process.exit(0); }
console.error("unexpected: " + args.join(" ")); process.exit(3);
`;

interface Run {
  status: number;
  output: string;
  calls: string[][];
  toml: string;
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function deploy(state: { loggedIn: boolean; databases: { name: string; uuid: string }[]; secrets: { name: string }[]; migrationsFail?: boolean; queueExists?: boolean }, toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8")): Run {
  const dir = mkdtempSync(join(tmpdir(), "tollgate-deploy-test-"));
  dirs.push(dir);
  const fake = join(dir, "wrangler");
  writeFileSync(fake, FAKE_WRANGLER);
  chmodSync(fake, 0o755);
  const config = join(dir, "wrangler.toml");
  writeFileSync(config, toml);
  const log = join(dir, "calls.ndjson");
  writeFileSync(log, "");
  const result = spawnSync(process.execPath, [join(ROOT, "scripts", "deploy.mjs")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, TOLLGATE_DEPLOY_WRANGLER: fake, TOLLGATE_DEPLOY_CONFIG: config, FAKE_STATE: JSON.stringify(state), FAKE_LOG: log },
  });
  const calls = readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((line) => (JSON.parse(line) as string[]).filter((a) => a !== "--config" && a !== config));
  return { status: result.status ?? -1, output: result.stdout + result.stderr, calls, toml: readFileSync(config, "utf8") };
}

describe("npm run deploy", () => {
  it("on a fresh account creates the database, writes its id, migrates, creates the alerts queue, deploys and prints the URL and the next step, in that order", () => {
    const run = deploy({ loggedIn: true, databases: [], secrets: [] });
    expect(run.status).toBe(0);
    expect(run.calls.map((c) => c.slice(0, 2).join(" "))).toEqual(["whoami", "d1 list", "d1 create", "d1 migrations", "queues info", "queues create", "deploy", "secret list"]);
    expect(run.calls[5]).toEqual(["queues", "create", "tollgate-alerts"]);
    expect(run.calls[2]).toEqual(["d1", "create", "tollgate"]);
    expect(run.calls[3]).toEqual(["d1", "migrations", "apply", "DB", "--remote"]);
    expect(run.toml).toContain(`database_id = "${NEW_ID}"`);
    expect(run.toml).not.toContain("00000000-0000-0000-0000-000000000000");
    expect(run.output).toContain("https://tollgate.example-account.workers.dev");
    expect(run.output).toContain("wrangler secret put ADMIN_TOKEN");
  });

  it("uses the account's database when it exists, and does not ask for ADMIN_TOKEN once it is set", () => {
    const existing = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee";
    const run = deploy({ loggedIn: true, databases: [{ name: "other", uuid: NEW_ID }, { name: "tollgate", uuid: existing }], secrets: [{ name: "ADMIN_TOKEN" }], queueExists: true });
    expect(run.status).toBe(0);
    expect(run.calls.some((c) => c[1] === "create")).toBe(false);
    expect(run.toml).toContain(`database_id = "${existing}"`);
    expect(run.output).not.toContain("wrangler secret put ADMIN_TOKEN");
  });

  it("keeps an id wrangler.toml already names, without listing the account's databases", () => {
    const id = "12345678-1234-4234-8234-123456789abc";
    const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8").replace("00000000-0000-0000-0000-000000000000", id);
    const run = deploy({ loggedIn: true, databases: [], secrets: [] }, toml);
    expect(run.status).toBe(0);
    expect(run.calls.some((c) => c[0] === "d1" && c[1] !== "migrations")).toBe(false);
    expect(run.toml).toBe(toml);
  });

  it("stops before anything else when wrangler is not logged in, and says what to run", () => {
    const run = deploy({ loggedIn: false, databases: [], secrets: [] });
    expect(run.status).toBe(1);
    expect(run.calls).toHaveLength(1);
    expect(run.output).toContain("npx wrangler login");
  });

  it("deploys nothing when the migrations fail", () => {
    const run = deploy({ loggedIn: true, databases: [{ name: "tollgate", uuid: NEW_ID }], secrets: [], migrationsFail: true });
    expect(run.status).toBe(1);
    expect(run.calls.some((c) => c[0] === "deploy")).toBe(false);
    expect(run.output).toContain("nothing was deployed");
  });
});

// `npm run deploy`: Tollgate on a Cloudflare account, from a fresh clone.
//   1. checks that wrangler is logged in (`wrangler whoami`);
//   2. finds the D1 database named in wrangler.toml (`tollgate`), creates it
//      when the account has none, and writes its id into wrangler.toml when
//      the file still holds the placeholder id;
//   3. applies the migrations to it (`wrangler d1 migrations apply DB --remote`);
//   4. creates the alerts queue named in wrangler.toml when the account has
//      none (`wrangler queues info`, then `wrangler queues create`): a deploy
//      with a queue binding fails while its queue is missing;
//   5. deploys (`wrangler deploy`: the Worker, its Durable Objects, the console);
//   6. prints the Worker's URL, and the next step: the ADMIN_TOKEN secret when
//      it is not set yet, then a health check to run.
// `--dry-run` touches no account: it says what it would do and builds the
// bundle with `wrangler deploy --dry-run` (CI runs it on every submission).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
// Both overridable so a test can run this script against a stand-in wrangler and a copy of the config.
const configPath = process.env.TOLLGATE_DEPLOY_CONFIG ?? join(root, "wrangler.toml");
const wranglerBin = process.env.TOLLGATE_DEPLOY_WRANGLER ?? join(root, "node_modules", ".bin", "wrangler");
const PLACEHOLDER_ID = "00000000-0000-0000-0000-000000000000";
const dryRun = process.argv.includes("--dry-run");

function fail(message) {
  console.error(`\n✗ ${message}`);
  process.exit(1);
}

/** Runs wrangler; its output is captured (and shown when `show`). */
function wrangler(args, { show = false, input } = {}) {
  const result = spawnSync(wranglerBin, [...args, "--config", configPath], { cwd: root, encoding: "utf8", input, stdio: [input === undefined ? "inherit" : "pipe", "pipe", "pipe"], env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
  if (show) {
    process.stdout.write(result.stdout ?? "");
    process.stderr.write(result.stderr ?? "");
  }
  return { ok: result.status === 0, stdout: result.stdout ?? "", stderr: result.stderr ?? "" };
}

/** The D1 block of wrangler.toml: the database's name and id. */
function d1Config(toml) {
  const block = /\[\[d1_databases\]\][^[]*/.exec(toml)?.[0] ?? "";
  const name = /^\s*database_name\s*=\s*"([^"]+)"/m.exec(block)?.[1];
  const id = /^\s*database_id\s*=\s*"([^"]*)"/m.exec(block)?.[1];
  if (name === undefined) fail("wrangler.toml has no [[d1_databases]] entry with a database_name.");
  return { name, id: id ?? null };
}

function step(n, text) {
  console.log(`\n${n}. ${text}`);
}

const toml = readFileSync(configPath, "utf8");
const d1 = d1Config(toml);

if (dryRun) {
  console.log("Dry run: no account is touched. On a real run this script would:");
  console.log(`  - check the login (wrangler whoami)`);
  console.log(`  - ${d1.id === null || d1.id === PLACEHOLDER_ID ? `find or create the D1 database "${d1.name}" and write its id into wrangler.toml` : `use the D1 database ${d1.id} named in wrangler.toml`}`);
  console.log(`  - apply the migrations in migrations/ to it (remote)`);
  console.log(`  - create the alerts queue named in wrangler.toml if the account has none`);
  console.log(`  - wrangler deploy, then print the URL and the next step`);
  step(1, "Building the bundle (wrangler deploy --dry-run)");
  const outdir = mkdtempSync(join(tmpdir(), "tollgate-deploy-"));
  try {
    const built = wrangler(["deploy", "--dry-run", "--outdir", outdir]);
    if (!built.ok) {
      process.stderr.write(built.stdout + built.stderr);
      fail("wrangler deploy --dry-run failed (its output is above).");
    }
    console.log("   the bundle builds; `npm run deploy:check` prints its size against the budget.");
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
  console.log("\n✓ dry run done");
  process.exit(0);
}

step(1, "Checking the login");
const who = wrangler(["whoami"]);
if (!who.ok || /not authenticated|You are not logged in/i.test(who.stdout + who.stderr)) {
  fail("wrangler is not logged in: run `npx wrangler login` (or set CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID), then `npm run deploy` again.");
}
console.log("   logged in");

step(2, `The D1 database "${d1.name}"`);
let databaseId = d1.id !== null && d1.id !== PLACEHOLDER_ID ? d1.id : null;
if (databaseId === null) {
  const listed = wrangler(["d1", "list", "--json"]);
  if (!listed.ok) fail(`wrangler d1 list failed:\n${listed.stderr.trim()}`);
  let databases = [];
  try {
    databases = JSON.parse(listed.stdout);
  } catch {
    fail("wrangler d1 list --json did not print JSON.");
  }
  databaseId = databases.find((db) => db.name === d1.name)?.uuid ?? null;
  if (databaseId === null) {
    console.log(`   the account has none: creating it`);
    const created = wrangler(["d1", "create", d1.name], { show: true });
    if (!created.ok) fail(`wrangler d1 create ${d1.name} failed (its output is above).`);
    databaseId = /"?database_id"?\s*[=:]\s*"([0-9a-f-]{36})"/.exec(created.stdout)?.[1] ?? /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/.exec(created.stdout)?.[1] ?? null;
    if (databaseId === null) fail("could not read the new database's id from wrangler's output (above); put it into wrangler.toml as database_id and run again.");
  } else {
    console.log(`   found ${databaseId}`);
  }
  const updated = d1.id === null
    ? toml.replace(/(database_name\s*=\s*"[^"]+"\s*\n)/, `$1database_id = "${databaseId}"\n`)
    : toml.replace(`database_id = "${PLACEHOLDER_ID}"`, `database_id = "${databaseId}"`);
  writeFileSync(configPath, updated);
  console.log(`   wrote database_id = "${databaseId}" into wrangler.toml (commit it: the next deploy uses it)`);
} else {
  console.log(`   using ${databaseId} from wrangler.toml`);
}

step(3, "Applying the migrations");
const migrated = wrangler(["d1", "migrations", "apply", "DB", "--remote"], { show: true, input: "y\n" });
if (!migrated.ok) fail("the migrations did not apply (wrangler's output is above); nothing was deployed.");

const queueName = /\[\[queues\.producers\]\][^[]*?queue\s*=\s*"([^"]+)"/.exec(toml)?.[1] ?? null;
if (queueName !== null) {
  step(4, `The alerts queue "${queueName}"`);
  if (wrangler(["queues", "info", queueName]).ok) console.log("   found");
  else {
    const made = wrangler(["queues", "create", queueName], { show: true });
    if (!made.ok) fail(`wrangler queues create ${queueName} failed (its output is above); nothing was deployed.`);
  }
}

step(5, "Deploying");
const deployed = wrangler(["deploy"], { show: true });
if (!deployed.ok) fail("wrangler deploy failed (its output is above).");
const url = /https:\/\/[^\s]+\.workers\.dev/.exec(deployed.stdout + deployed.stderr)?.[0] ?? null;

step(6, "Next");
const secrets = wrangler(["secret", "list", "--format", "json"]);
let hasAdminToken = false;
try {
  hasAdminToken = JSON.parse(secrets.stdout).some((secret) => secret.name === "ADMIN_TOKEN");
} catch {
  // An older wrangler or no secrets yet: say how to set it either way.
}
console.log(url === null ? "   deployed (wrangler printed no workers.dev URL: the Worker serves on the routes in wrangler.toml)" : `   deployed: ${url}`);
if (!hasAdminToken) {
  console.log("   set the admin token (32 characters or more), which turns on the admin API, the CLI and the console:");
  console.log("     openssl rand -hex 32 | tee admin-token.txt | npx wrangler secret put ADMIN_TOKEN");
}
console.log("   set ORIGIN_URL (and TOLLGATE) under [vars] in wrangler.toml, deploy again, then check:");
console.log(`     curl ${url ?? "https://<your worker>"}/_tollgate/health`);
console.log("\n✓ done");

// `npm run bench:global`: global limits across isolates (bench/lib/global-bench.mjs)
// for K = 2, 4 and 8 gateway copies over one LimitLedger — the most admitted
// in any window against the exact GCRA and the published bound, the refused
// share of a caller at 90 % of its limit, ledger calls, and the latency
// against the same limit per isolate. About 2.5 minutes with the bundle
// build (most of it the K × phases, each bounded in time); bounded by a
// watchdog. Prints the table, writes bench/results/global.json and the table
// into docs/performance.md (between its bench:global markers). `-- --quick`
// runs K = 2 briefly and writes bench/results/global-quick.json only.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupAll } from "./lib/cleanup.mjs";
import { adminToken } from "./lib/gateway-config.mjs";
import { benchGlobal, GLOBAL_SETTINGS, globalSummary } from "./lib/global-bench.mjs";
import { buildGateway, readCompatibility } from "./lib/instances.mjs";
import { machineInfo } from "./lib/machine.mjs";

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH, "..");
const QUICK = process.argv.includes("--quick");
const WATCHDOG_S = 5 * 60;
const BEGIN = "<!-- bench:global:begin -->";
const END = "<!-- bench:global:end -->";

const startedAt = Date.now();
function log(line) {
  console.log(`[${((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)} s] ${line}`);
}

/** Puts `table` between the markers of docs/performance.md (the prose around it is written by hand). */
function writeIntoDocs(table, result) {
  const file = join(ROOT, "docs", "performance.md");
  if (!existsSync(file)) return false;
  const doc = readFileSync(file, "utf8");
  const begin = doc.indexOf(BEGIN);
  const end = doc.indexOf(END);
  if (begin < 0 || end < begin) return false;
  const machine = result.machine;
  const stamp = `Measured by \`npm run bench:global\` on ${new Date(result.at_unix_ms).toISOString().slice(0, 10)}: ${machine.cpu_model} × ${machine.cpu_count}, Node ${machine.node}, wrangler ${machine.wrangler}; 1-minute load average ${result.load_average_1m.before} before, ${result.load_average_1m.after} after (other jobs share the machine).`;
  writeFileSync(file, `${doc.slice(0, begin + BEGIN.length)}\n${table}\n\n${stamp}\n${doc.slice(end)}`);
  return true;
}

async function main() {
  const watchdog = setTimeout(() => {
    console.error(`\nThe global-limits bench passed ${WATCHDOG_S} s: stopping.`);
    void cleanupAll().finally(() => process.exit(2));
  }, WATCHDOG_S * 1000);
  watchdog.unref();
  const machine = machineInfo(ROOT);
  log(`machine: ${machine.cpu_model} × ${machine.cpu_count}, Node ${machine.node}, wrangler ${machine.wrangler}`);
  log("building the gateway bundle (wrangler deploy --dry-run)");
  const bundle = buildGateway(ROOT, join(BENCH, ".build"));
  const settings = QUICK ? GLOBAL_SETTINGS.quick : GLOBAL_SETTINGS.full;
  const loadBefore = loadavg()[0];
  const global = await benchGlobal({ root: ROOT, bundle, compat: readCompatibility(ROOT), token: adminToken(), stateDir: join(BENCH, ".state"), settings, log });
  const load = { before: Math.round(loadBefore * 100) / 100, after: Math.round(loadavg()[0] * 100) / 100 };
  log(`load average (1 min): ${load.before} before, ${load.after} after`);
  const result = { quick: QUICK, at_unix_ms: Date.now(), machine, load_average_1m: load, global };
  mkdirSync(join(BENCH, "results"), { recursive: true });
  const name = QUICK ? "global-quick.json" : "global.json";
  writeFileSync(join(BENCH, "results", name), `${JSON.stringify(result, null, 2)}\n`);
  const table = globalSummary(global);
  console.log(`\n${table}\n`);
  log(`wrote bench/results/${name}`);
  if (!QUICK) log(writeIntoDocs(table, result) ? "wrote the table into docs/performance.md" : "docs/performance.md has no bench:global markers: the table is not written there");
}

try {
  await main();
} catch (err) {
  console.error(`\n✗ global-limits bench failed: ${err?.stack ?? err}`);
  process.exitCode = 1;
} finally {
  await cleanupAll();
}

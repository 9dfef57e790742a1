// `npm run bench:streams`: the streams part of `npm run bench` alone
// (bench/lib/streams.mjs) — messages per second through the gateway against
// a direct connection, and the gateway isolate's heap per open stream with
// 1,000 open. About a minute. `-- --quick` shortens it (figures not for
// publishing; writes bench/results/streams-quick.json).
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupAll } from "./lib/cleanup.mjs";
import { adminToken } from "./lib/gateway-config.mjs";
import { buildGateway, readCompatibility } from "./lib/instances.mjs";
import { machineInfo } from "./lib/machine.mjs";
import { benchStreams, STREAMS_SETTINGS, streamsSummary } from "./lib/streams.mjs";

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH, "..");
const QUICK = process.argv.includes("--quick");
const WATCHDOG_S = 5 * 60;

const startedAt = Date.now();
function log(line) {
  console.log(`[${((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)} s] ${line}`);
}

async function main() {
  const watchdog = setTimeout(() => {
    console.error(`\nThe streams bench passed ${WATCHDOG_S} s: stopping.`);
    void cleanupAll().finally(() => process.exit(2));
  }, WATCHDOG_S * 1000);
  watchdog.unref();
  const machine = machineInfo(ROOT);
  log(`machine: ${machine.cpu_model} × ${machine.cpu_count}, Node ${machine.node}, wrangler ${machine.wrangler}`);
  log("building the gateway bundle (wrangler deploy --dry-run)");
  const bundle = buildGateway(ROOT, join(BENCH, ".build"));
  const settings = QUICK ? STREAMS_SETTINGS.quick : STREAMS_SETTINGS.full;
  const loadBefore = loadavg()[0];
  const streams = await benchStreams({ root: ROOT, bundle, compat: readCompatibility(ROOT), token: adminToken(), stateDir: join(BENCH, ".state"), settings, log });
  // Other jobs share the machine: say how busy it was (1-minute load average, before and after).
  const load = { before: Math.round(loadBefore * 100) / 100, after: Math.round(loadavg()[0] * 100) / 100 };
  log(`load average (1 min): ${load.before} before, ${load.after} after`);
  const result = { quick: QUICK, machine, load_average_1m: load, streams };
  mkdirSync(join(BENCH, "results"), { recursive: true });
  const name = QUICK ? "streams-quick.json" : "streams.json";
  writeFileSync(join(BENCH, "results", name), `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\n${streamsSummary(streams)}\n`);
  log(`wrote bench/results/${name}`);
}

try {
  await main();
} catch (err) {
  console.error(`\n✗ streams bench failed: ${err?.stack ?? err}`);
  process.exitCode = 1;
} finally {
  await cleanupAll();
}

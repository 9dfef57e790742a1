// The frame of a bench part run on its own (`npm run bench:streams`,
// `bench:global`): a watchdog, the machine line, the gateway bundle, the
// 1-minute load average before and after (other jobs share the machine),
// the result JSON in bench/results/, the printed summary, and the cleanup of
// every process the part started, on an error or the watchdog too.
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupAll } from "./cleanup.mjs";
import { adminToken } from "./gateway-config.mjs";
import { buildGateway, readCompatibility } from "./instances.mjs";
import { machineInfo } from "./machine.mjs";

const BENCH = join(dirname(fileURLToPath(import.meta.url)), "..");
export const ROOT = join(BENCH, "..");

const loadNow = () => Math.round(loadavg()[0] * 100) / 100;

/**
 * Runs one part. `run({ root, bundle, compat, token, stateDir, quick, log })`
 * resolves to the part's figures, kept under `key` in the result;
 * `summary(figures)` is printed; `after(result, summaryText, log)` may do
 * more (bench:global writes its table into the docs). Writes
 * bench/results/<key>.json, or <key>-quick.json with `--quick`.
 */
export async function runStandalone({ title, key, run, summary, after = () => {}, watchdogS = 5 * 60 }) {
  const quick = process.argv.includes("--quick");
  const startedAt = Date.now();
  const log = (line) => console.log(`[${((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)} s] ${line}`);
  try {
    const watchdog = setTimeout(() => {
      console.error(`\nThe ${title} bench passed ${watchdogS} s: stopping.`);
      void cleanupAll().finally(() => process.exit(2));
    }, watchdogS * 1000);
    watchdog.unref();
    const machine = machineInfo(ROOT);
    log(`machine: ${machine.cpu_model} × ${machine.cpu_count}, Node ${machine.node}, wrangler ${machine.wrangler}`);
    log("building the gateway bundle (wrangler deploy --dry-run)");
    const bundle = buildGateway(ROOT, join(BENCH, ".build"));
    const before = loadNow();
    const figures = await run({ root: ROOT, bundle, compat: readCompatibility(ROOT), token: adminToken(), stateDir: join(BENCH, ".state"), quick, log });
    const load = { before, after: loadNow() };
    log(`load average (1 min): ${load.before} before, ${load.after} after`);
    const result = { quick, at_unix_ms: Date.now(), machine, load_average_1m: load, [key]: figures };
    mkdirSync(join(BENCH, "results"), { recursive: true });
    const name = quick ? `${key}-quick.json` : `${key}.json`;
    writeFileSync(join(BENCH, "results", name), `${JSON.stringify(result, null, 2)}\n`);
    const text = summary(figures);
    console.log(`\n${text}\n`);
    log(`wrote bench/results/${name}`);
    await after(result, text, log);
  } catch (err) {
    console.error(`\n✗ ${title} bench failed: ${err?.stack ?? err}`);
    process.exitCode = 1;
  } finally {
    await cleanupAll();
  }
}

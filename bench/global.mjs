// `npm run bench:global`: global limits across isolates (bench/lib/global-bench.mjs)
// for K = 2, 4 and 8 gateway copies over one LimitLedger — the most admitted
// in any window against the exact GCRA and the published bound, the refused
// share of a caller at 90 % of its limit, ledger calls, and the latency
// against the same limit per isolate. About 2.5 minutes with the bundle
// build (most of it the K × phases, each bounded in time); bounded by a
// watchdog. Prints the table, writes bench/results/global.json and the table
// into docs/performance.md (between its bench:global markers). `-- --quick`
// runs K = 2 briefly and writes bench/results/global-quick.json only.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { benchGlobal, GLOBAL_SETTINGS, globalSummary } from "./lib/global-bench.mjs";
import { ROOT, runStandalone } from "./lib/standalone.mjs";

const BEGIN = "<!-- bench:global:begin -->";
const END = "<!-- bench:global:end -->";

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

await runStandalone({
  title: "global-limits",
  key: "global",
  run: ({ quick, ...rest }) => benchGlobal({ ...rest, settings: quick ? GLOBAL_SETTINGS.quick : GLOBAL_SETTINGS.full }),
  summary: globalSummary,
  after: (result, table, log) => {
    if (!result.quick) log(writeIntoDocs(table, result) ? "wrote the table into docs/performance.md" : "docs/performance.md has no bench:global markers: the table is not written there");
  },
});

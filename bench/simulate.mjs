// `npm run simulate`: the deployment simulated at internet scale (bench/sim/):
// the real lease code of global limits and of budgets on a simulated clock,
// 300 isolates over 10 regions 20–250 ms from the object, an object serving
// 1,000 calls a second, isolates coming and going. Runs the scenarios and the
// sweeps of the settings, prints the tables, writes
// bench/results/simulate.json, the SVG plots into docs/ and the tables into
// docs/global-limits.md and docs/budgets.md (between their simulate
// markers). Seeded: the same seed and code give the same figures on any
// machine. `-- --quick` runs the small scale (40 isolates) and writes
// bench/results/simulate-quick.json only; `-- --seed=N` picks another seed;
// `-- --render` writes the plots and the docs' tables again from
// bench/results/simulate.json without simulating. Runs under tsx (the
// simulation imports the TypeScript sources).
import { execSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runBudgetPlan } from "./sim/budget-plan.ts";
import { budgetMarkdown, budgetSvg } from "./sim/budget-report.ts";
import { runGlobalPlan } from "./sim/global-plan.ts";
import { globalMarkdown, globalSvg } from "./sim/global-report.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const quick = process.argv.includes("--quick");
const render = process.argv.includes("--render");
const seedArg = process.argv.find((a) => a.startsWith("--seed="));
const seed = seedArg === undefined ? 7 : Number(seedArg.slice("--seed=".length));
if (!Number.isSafeInteger(seed)) {
  console.error("--seed must be a whole number");
  process.exit(2);
}
const scale = quick ? "small" : "full";
const startedAt = Date.now();
const log = (line) => console.log(`[${((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)} s] ${line}`);

function commit() {
  try {
    const rev = execSync("git rev-parse --short HEAD", { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const dirty = execSync("git status --porcelain -- src bench/sim", { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim().length > 0;
    return dirty ? `${rev} with uncommitted changes` : rev;
  } catch {
    return "unknown";
  }
}

/** Puts `text` between `<!-- simulate:<key>:begin -->` and its end marker in docs/<file>; false when the markers are missing. */
function writeBetweenMarkers(file, key, text) {
  const path = join(ROOT, "docs", file);
  if (!existsSync(path)) return false;
  const doc = readFileSync(path, "utf8");
  const begin = `<!-- simulate:${key}:begin -->`;
  const end = `<!-- simulate:${key}:end -->`;
  const b = doc.indexOf(begin);
  const e = doc.indexOf(end);
  if (b < 0 || e < b) return false;
  writeFileSync(path, `${doc.slice(0, b + begin.length)}\n${text}\n${doc.slice(e)}`);
  return true;
}

const deployment = quick
  ? "40 isolates over 10 regions (the small scale: rates scaled to keep each isolate's traffic)"
  : "300 isolates over 10 regions 20–250 ms (round trip) from the object, each living 60 s on average; the object serves 1,000 calls a second";
const name = quick ? "simulate-quick.json" : "simulate.json";
let result;
if (render) {
  result = JSON.parse(readFileSync(join(ROOT, "bench", "results", "simulate.json"), "utf8"));
  log(`rendering bench/results/simulate.json (seed ${result.seed}, code ${result.code})`);
} else {
  const code = commit();
  log(`simulating (${scale} scale, seed ${seed}, code ${code})`);
  const global = await runGlobalPlan(scale, seed, log);
  const budgets = await runBudgetPlan(scale, seed, log);
  result = { quick, seed, at_unix_ms: Date.now(), code, global, budgets };
  mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
  // Arrays of numbers (the per-second series) on one line each.
  const json = JSON.stringify(result, null, 1).replace(/\[\s+(-?[\d.e+-]+(?:,\s+-?[\d.e+-]+)*)\s+\]/g, (_, inner) => `[${inner.replace(/\s+/g, "")}]`);
  writeFileSync(join(ROOT, "bench", "results", name), `${json}\n`);
  log(`wrote bench/results/${name}`);
}
const at = new Date(result.at_unix_ms).toISOString().slice(0, 10);
const stamp = `Simulated by \`npm run simulate\` on ${at} (seed ${result.seed}, code ${result.code}): ${deployment}.`;
const markdown = globalMarkdown(result.global, stamp);
const budgetText = budgetMarkdown(result.budgets, stamp);
console.log(`\n${markdown}\n\n${budgetText}\n`);
const { global, budgets, seed: resultSeed } = result;
if (!quick) {
  writeFileSync(join(ROOT, "docs", "global-limits-simulated.svg"), globalSvg(global, `${deployment}; seed ${resultSeed}`));
  log("wrote docs/global-limits-simulated.svg");
  log(writeBetweenMarkers("global-limits.md", "global", markdown) ? "wrote the tables into docs/global-limits.md" : "docs/global-limits.md has no simulate:global markers: the tables are not written there");
  writeFileSync(join(ROOT, "docs", "budgets-simulated.svg"), budgetSvg(budgets, `${deployment}; seed ${resultSeed}`));
  log("wrote docs/budgets-simulated.svg");
  log(writeBetweenMarkers("budgets.md", "budgets", budgetText) ? "wrote the tables into docs/budgets.md" : "docs/budgets.md has no simulate:budgets markers: the tables are not written there");
}

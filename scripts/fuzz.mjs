// npm run fuzz -- [--runs N] [--seed S] [--no-shrink]
//
// Runs the differential fuzz (test/integration/contract-fuzz.test.ts and
// contract-fuzz-shadow.test.ts: the gateway in workerd against the
// contract's model in test/model/) for N scenarios of each from seed S (default: a new random seed each run), and prints
// the seed again when it fails, so the same run replays with --seed. The
// shrunk failing case is printed as a test to paste (--no-shrink: the first
// failing case as found, at once).
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";

const USAGE = "usage: npm run fuzz -- [--runs N] [--seed S] [--no-shrink]";

let options;
try {
  ({ values: options } = parseArgs({ options: { runs: { type: "string", default: "500" }, seed: { type: "string" }, "no-shrink": { type: "boolean" }, help: { type: "boolean", short: "h" } } }));
} catch (error) {
  console.error(`${error.message}\n${USAGE}`);
  process.exit(2);
}
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}
const runs = Number(options.runs);
const seed = options.seed === undefined ? Math.floor(Math.random() * 0x7fff_ffff) : Number(options.seed);
if (!Number.isInteger(runs) || runs < 1 || !Number.isInteger(seed)) {
  console.error(`--runs must be a whole number >= 1 and --seed a whole number\n${USAGE}`);
  process.exit(2);
}

console.log(`contract fuzz: ${runs} scenarios from seed ${seed}`);
const child = spawn("npx", ["vitest", "run", "--project", "workers", "test/integration/contract-fuzz.test.ts", "test/integration/contract-fuzz-shadow.test.ts", "-t", "random configs"], {
  stdio: "inherit",
  env: { ...process.env, VITE_CONTRACT_FUZZ_RUNS: String(runs), VITE_CONTRACT_FUZZ_SEED: String(seed), ...(options["no-shrink"] ? { VITE_CONTRACT_FUZZ_SHRINK: "0" } : {}) },
});
child.on("exit", (code) => {
  if (code === 0) console.log(`contract fuzz: ${runs} scenarios from seed ${seed} agree with the model`);
  else console.error(`contract fuzz FAILED (seed ${seed}): replay with npm run fuzz -- --runs ${runs} --seed ${seed}`);
  process.exit(code ?? 1);
});

// `npm run mutate`: plants each bug of scripts/mutants.mjs, one at a time, in
// a git worktree of a commit (never in this working tree), runs the test
// files that must catch it, and prints the score and the survivors.
//
// Why scripted and not StrykerJS: Stryker 9 (10 needs Node 22) can drive
// vitest-pool-workers once its tsconfig rewrite is turned off (TypeScript 7
// has no JS API), but it mutates every operator of every line: ~75 mutants
// for the 41 lines of src/engine/status-match.ts, 7 minutes on this machine's
// two cores with one test file, so hours for these folders, with most
// survivors string and log-message changes. A listed bug names the behaviour
// it breaks and the tests that pin it, which is what a survivor must be
// explained by.
//
//   node scripts/mutate.mjs [--rev <commit>] [--worktree <dir>] [--only <id,...>]
//                           [--file <substring>] [--list] [--timeout-s <n>]
//                           [--min-score <percent>] [--json <file>] [--mutants <file>]
//
// --rev        the commit measured (default HEAD); the worktree is moved to it
// --worktree   where (default $TMPDIR/tollgate-mutate); created with
//              `git worktree add` and `npm ci` when missing; refused when it
//              holds a change of its own
// --only/--file  a subset of the mutants, by id or by source file
// --list       checks every mutant applies (its `find` once in its file) and stops
// --min-score  exit 1 below this share killed (default 90; stale mutants fail too)
// --mutants    another list than scripts/mutants.mjs (an older one, to measure an older commit)
//
// Each mutant's tests run with --bail=1, one vitest process per project (the
// project inferred from the path: test/engine → engine, the rest → workers); a
// mutant is killed when a test fails, survives when they all pass, and
// counts as killed on a timeout (a hang). A planted file is restored in a
// `finally`, checked against git, and the run stops if it cannot be.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { pathToFileURL } from "node:url";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    rev: { type: "string", default: "HEAD" },
    worktree: { type: "string", default: join(tmpdir(), "tollgate-mutate") },
    only: { type: "string" },
    file: { type: "string" },
    list: { type: "boolean", default: false },
    "timeout-s": { type: "string", default: "300" },
    "min-score": { type: "string", default: "90" },
    json: { type: "string" },
    mutants: { type: "string" },
  },
});
const { MUTANTS } = await import(args.mutants === undefined ? "./mutants.mjs" : pathToFileURL(resolve(args.mutants)).href);

const repo = resolve(new URL("..", import.meta.url).pathname);
const worktree = resolve(args.worktree);
const timeoutMs = Number(args["timeout-s"]) * 1000;

function git(cwd, ...argv) {
  return execFileSync("git", argv, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
}

/** A clean worktree of `rev`: created when missing, refused when it holds changes. */
function prepareWorktree() {
  const rev = git(repo, "rev-parse", "--verify", `${args.rev}^{commit}`);
  if (!existsSync(worktree)) {
    console.log(`mutate: git worktree add ${worktree} ${rev.slice(0, 10)}`);
    git(repo, "worktree", "add", "--detach", worktree, rev);
  } else {
    const listed = git(repo, "worktree", "list", "--porcelain").split("\n").some((line) => line === `worktree ${worktree}`);
    if (!listed) throw new Error(`${worktree} exists and is not a worktree of ${repo}: pass --worktree`);
    const dirty = git(worktree, "status", "--porcelain", "--untracked-files=no");
    if (dirty !== "") throw new Error(`the worktree ${worktree} has changes of its own; refusing to plant mutants over them:\n${dirty}`);
    git(worktree, "checkout", "--quiet", "--detach", rev);
  }
  if (!existsSync(join(worktree, "node_modules"))) {
    console.log("mutate: npm ci in the worktree");
    execFileSync("npm", ["ci", "--no-audit", "--no-fund"], { cwd: worktree, stdio: "inherit" });
  }
  return rev;
}

function projectOf(testFile) {
  if (testFile.startsWith("test/engine/")) return "engine";
  if (testFile.startsWith("test/tooling/")) return "tooling";
  if (testFile.startsWith("test/e2e/")) throw new Error(`${testFile}: e2e files are too slow to run per mutant`);
  return "workers";
}

function occurrences(text, find) {
  let n = 0;
  for (let at = text.indexOf(find); at !== -1; at = text.indexOf(find, at + 1)) n++;
  return n;
}

/** The vitest run under way (its process group is ended with this script). */
let running = null;

/** Runs vitest on `files` in the worktree; resolves with its outcome. */
function runTests(files, label, bail = true, limitMs = timeoutMs) {
  const projects = [...new Set(files.map(projectOf))];
  const report = join(reportDir, `${label}.json`);
  const argv = ["vitest", "run", ...(bail ? ["--bail=1"] : []), "--reporter=json", `--outputFile=${report}`, ...projects.flatMap((p) => ["--project", p]), ...files];
  return new Promise((resolveRun) => {
    const started = Date.now();
    const child = spawn("npx", argv, { cwd: worktree, stdio: ["ignore", "pipe", "pipe"], detached: true });
    running = child;
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    }, limitMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      running = null;
      const failed = [];
      const failedFiles = new Set();
      try {
        const json = JSON.parse(readFileSync(report, "utf8"));
        for (const file of json.testResults) {
          for (const t of file.assertionResults) if (t.status === "failed") failed.push(t.fullName);
          if (file.status === "failed") failedFiles.add(relative(worktree, file.name));
        }
      } catch {}
      resolveRun({ code, timedOut, failed, failedFiles: [...failedFiles], ms: Date.now() - started, output });
    });
  });
}

/**
 * A mutant's files one project at a time, the Node ones first (they start in
 * a second): bailing out of a run that spans projects stops workerd's pool
 * while it starts, which reads as an error, not a failed test.
 */
async function runByProject(files, label) {
  const order = ["engine", "tooling", "workers"];
  let last = null;
  for (const project of order) {
    const mine = files.filter((f) => projectOf(f) === project);
    if (mine.length === 0) continue;
    const run = await runTests(mine, `${label}-${project}`);
    if (last !== null) run.ms += last.ms;
    last = run;
    if (run.code !== 0 || run.timedOut) break;
  }
  return last;
}

const selected = MUTANTS.filter((m) => (args.only === undefined || args.only.split(",").includes(m.id)) && (args.file === undefined || m.file.includes(args.file)));
const ids = new Set();
for (const m of MUTANTS) {
  if (ids.has(m.id)) throw new Error(`two mutants are named ${m.id}`);
  ids.add(m.id);
}

const rev = prepareWorktree();
const reportDir = mkdtempSync(join(tmpdir(), "tollgate-mutate-reports-"));
console.log(`mutate: ${selected.length} mutants on ${rev.slice(0, 10)} in ${worktree}`);

// Which mutants apply at this commit, and which of their test files exist there.
const plan = [];
const stale = [];
for (const m of selected) {
  const path = join(worktree, m.file);
  const text = existsSync(path) ? readFileSync(path, "utf8") : null;
  const n = text === null ? 0 : occurrences(text, m.find);
  if (n !== 1) {
    stale.push({ ...m, why: text === null ? "no such file" : `its find occurs ${n} times` });
    continue;
  }
  const tests = m.tests.filter((t) => existsSync(join(worktree, t)));
  plan.push({ ...m, original: text, planted: text.replace(m.find, () => m.replace), present: tests, missing: m.tests.filter((t) => !tests.includes(t)) });
}
for (const s of stale) console.log(`STALE     ${s.id} (${s.file}): ${s.why}`);
if (args.list) {
  for (const p of plan) console.log(`ok        ${p.id.padEnd(34)} ${p.file}  [${p.present.join(", ")}]${p.missing.length > 0 ? `  (missing here: ${p.missing.join(", ")})` : ""}`);
  process.exit(stale.length > 0 ? 1 : 0);
}

// The tests must pass unplanted, or every mutant would count as killed. All
// at once first; a file that fails there is run again alone, as a mutant's
// files are (files in one runner share storage and module state).
const allTests = [...new Set(plan.flatMap((p) => p.present))];
console.log(`mutate: baseline, ${allTests.length} test files unplanted`);
const baseline = await runTests(allTests, "baseline", false, Math.max(timeoutMs, 30 * 60_000));
if (baseline.timedOut) {
  console.error("mutate: the unplanted tests did not finish in 30 minutes; stopping");
  process.exit(2);
}
// A file that fails alone too is left out of every mutant's run (it would
// "kill" them all), and said so: the score is then over the files that pass.
const broken = [];
if (baseline.code !== 0) {
  const again = baseline.failedFiles.length === 0 ? allTests : baseline.failedFiles;
  for (const file of again) {
    const alone = await runTests([file], `baseline-${again.indexOf(file)}`, false);
    if (alone.code === 0 && !alone.timedOut) {
      console.log(`mutate: ${file} failed beside the others but passes alone (as mutants run it)`);
      continue;
    }
    console.log(`mutate: ${file} FAILS without any mutant (${alone.failed.slice(0, 2).join("; ")}): left out of every mutant's tests`);
    broken.push(file);
  }
  for (const p of plan) {
    p.missing.push(...p.present.filter((t) => broken.includes(t)));
    p.present = p.present.filter((t) => !broken.includes(t));
  }
}

let planted = null;
const restore = () => {
  if (planted === null) return;
  writeFileSync(join(worktree, planted.file), planted.original);
  planted = null;
};
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    restore();
    if (running !== null) {
      try {
        process.kill(-running.pid, "SIGKILL");
      } catch {}
    }
    process.exit(130);
  });
}

const results = [];
for (const [i, m] of plan.entries()) {
  let outcome;
  if (m.present.length === 0) {
    outcome = { status: "survived", by: [], ms: 0, note: "no test file of its list exists at this commit" };
  } else {
    planted = m;
    writeFileSync(join(worktree, m.file), m.planted);
    let run;
    try {
      run = await runByProject(m.present, m.id);
    } finally {
      restore();
    }
    if (git(worktree, "status", "--porcelain", "--untracked-files=no", "--", m.file) !== "") throw new Error(`${m.file} is not back to ${rev} after ${m.id}: stopping`);
    if (run.timedOut) outcome = { status: "timeout", by: [], ms: run.ms };
    else if (run.code === 0) outcome = { status: "survived", by: [], ms: run.ms };
    else if (run.failed.length > 0) outcome = { status: "killed", by: run.failed, ms: run.ms };
    else outcome = { status: "error", by: [], ms: run.ms, note: run.output.split("\n").filter((l) => /Error|error TS|FAIL/.test(l)).slice(0, 3).join(" | ") };
  }
  results.push({ id: m.id, group: m.group ?? "scored", file: m.file, breaks: m.breaks, tests: m.present, ...outcome });
  const by = outcome.by.length > 0 ? `  by: ${outcome.by[0]}` : outcome.note ? `  (${outcome.note})` : "";
  console.log(`${String(i + 1).padStart(3)}/${plan.length} ${outcome.status.toUpperCase().padEnd(8)} ${m.id.padEnd(34)} ${(outcome.ms / 1000).toFixed(0).padStart(4)} s${by}`);
}

function score(group) {
  const rs = results.filter((r) => group === null || r.group === group);
  const killed = rs.filter((r) => r.status === "killed" || r.status === "timeout").length;
  const counted = rs.filter((r) => r.status !== "error").length;
  return { killed, counted, errors: rs.length - counted, percent: counted === 0 ? 0 : (100 * killed) / counted };
}
const scored = score("scored");
const seams = score("seams");
console.log("\nSurvivors:");
for (const r of results.filter((x) => x.status === "survived")) console.log(`  ${r.id} (${r.file}): ${r.breaks}${r.note ? ` [${r.note}]` : ""}`);
if (results.every((r) => r.status !== "survived")) console.log("  none");
const errors = results.filter((r) => r.status === "error");
if (errors.length > 0) {
  console.log("\nMutants that did not build or run (not counted):");
  for (const r of errors) console.log(`  ${r.id}: ${r.note}`);
}
console.log(
  `\nMutation score on ${rev.slice(0, 10)}: ${scored.percent.toFixed(1)} % killed (${scored.killed} of ${scored.counted}) over src/engine, src/limits, src/durable/budget-store.ts, src/alerts, src/proxy/request-path.ts` +
    (seams.counted > 0 ? `; issue 37's other seams: ${seams.killed} of ${seams.counted}` : "") +
    (stale.length > 0 ? `; ${stale.length} stale mutants not run` : ""),
);
if (broken.length > 0) console.log(`Left out, failing without any mutant: ${broken.join(", ")}`);
if (args.json !== undefined) writeFileSync(args.json, JSON.stringify({ rev, score: scored, seams, broken, stale: stale.map((s) => ({ id: s.id, why: s.why })), results }, null, 2));
rmSync(reportDir, { recursive: true, force: true });
process.exit(stale.length > 0 || scored.percent < Number(args["min-score"]) ? 1 : 0);

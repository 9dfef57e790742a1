// `npm run bench:ab -- --base=<git rev> [--rounds=N] [--throughput]`: the
// working tree's gateway against the one built from <rev>, side by side in
// the same interleaved rounds. On a machine whose speed drifts over minutes
// (the 2-core VM here served the bare Worker anywhere from 1,200 to 3,600
// requests a second on different days), two builds measured in separate runs
// cannot be told apart by 10 or 20 µs; side by side, they can.
//
// By default, in the isolate (as `npm run bench:pipeline`): each build is the
// real bundle behind bench/loop-worker.js, whose origin answers inside the
// isolate, and one request runs PASSES requests through the Worker's `fetch`;
// a build's cost is its workerd's CPU time per pass. Cases: a cached key
// admitted ((b)), a 429 (a key over its limit), a 401 (made-up keys from
// fresh addresses). Each round runs every case on base, then new, then base
// again, and compares new with the mean of the two base batches around it
// (so a drift within the round cancels).
//
// `--throughput`: the same three cases by closed-loop throughput on 8
// connections (4 s each, order bare, base, new), a request's own cost being
// 1/requests per second less the bare Worker's in the same round ((a) for the
// key, `ok` for the 429, `ok` under the same random keys and addresses for
// the 401). It includes the sockets and HTTP parsing, and is the noisier.
//
// Prints a Markdown table; writes bench/results/ab.json. The base's tree is
// checked out under bench/.ab/ (git worktree, node_modules linked) and
// removed after.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupAll, onCleanup } from "./lib/cleanup.mjs";
import { processCpu } from "./lib/cpu-time.mjs";
import { adminToken, EXHAUSTED_TENANT, tollgateConfig, UNLIMITED_TENANT } from "./lib/gateway-config.mjs";
import { applyMigrations, buildGateway, readCompatibility, seedTenantAndKey, startWorker, waitHealthy } from "./lib/instances.mjs";
import { runLoad } from "./lib/load.mjs";
import { median, ownUsPerRound, round, spread } from "./lib/stats.mjs";
import { startOriginThread } from "./origin.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, "..");
const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const BASE = arg("base");
const THROUGHPUT = process.argv.includes("--throughput");
const ROUNDS = Number(arg("rounds") ?? (THROUGHPUT ? 7 : 10));
/** In-isolate passes per loop request, and loop requests per batch. */
const PASSES = 500;
const BATCH = 6;
const CONNECTIONS = 8;
const DURATION_S = 4;
const PATH = "/bench/item?x=1";
if (!BASE) throw new Error("usage: npm run bench:ab -- --base=<git rev> [--rounds=N] [--throughput]");

const git = (...args) => {
  const out = spawnSync("git", args, { cwd: ROOT, encoding: "utf8" });
  if (out.status !== 0) throw new Error(`git ${args.join(" ")}: ${out.stderr}`);
  return out.stdout.trim();
};

const baseRev = git("rev-parse", "--short", BASE);
const baseTree = join(here, ".ab", baseRev);
let out;
try {
  rmSync(baseTree, { recursive: true, force: true });
  git("worktree", "prune");
  mkdirSync(dirname(baseTree), { recursive: true });
  git("worktree", "add", "--detach", baseTree, baseRev);
  onCleanup(() => {
    rmSync(baseTree, { recursive: true, force: true });
    spawnSync("git", ["worktree", "prune"], { cwd: ROOT });
  });
  if (!existsSync(join(baseTree, "node_modules"))) symlinkSync(join(ROOT, "node_modules"), join(baseTree, "node_modules"), "dir");
  // Each build in a folder of its own, laid out as bench/ holds its bundle, so the loop worker's import finds it.
  const dirs = { base: join(here, ".ab", "loop-base"), new: join(here, ".ab", "loop-new") };
  const bundles = { base: buildGateway(baseTree, join(dirs.base, ".build")), new: buildGateway(ROOT, join(dirs.new, ".build")) };
  for (const dir of Object.values(dirs)) copyFileSync(join(here, "loop-worker.js"), join(dir, "loop-worker.js"));
  const compat = readCompatibility(ROOT);
  const token = adminToken();
  const roots = { base: baseTree, new: ROOT };
  const startBuild = async (name, scriptPath, bindings) => {
    const gw = await startWorker({ name: `ab-${name}`, scriptPath, gateway: true, stateDir: join(here, ".state", `ab-${name}`), compat, bindings: { ADMIN_TOKEN: token, TOLLGATE: tollgateConfig("enforce"), ...bindings } });
    await applyMigrations(roots[name], gw);
    await waitHealthy(gw.url);
    const hot = await seedTenantAndKey(gw.url, token, "bench", UNLIMITED_TENANT, "ab (key)");
    const exhausted = await seedTenantAndKey(gw.url, token, "exhausted", EXHAUSTED_TENANT, "ab (429)");
    return { ...gw, hot: { authorization: `Bearer ${hot}` }, exhausted: { authorization: `Bearer ${exhausted}` } };
  };
  out = { at: new Date().toISOString(), base: baseRev, new: `${git("rev-parse", "--short", "HEAD")}${git("status", "--porcelain", "src").length > 0 ? " + uncommitted src" : ""}`, instrument: THROUGHPUT ? "throughput" : "in-isolate CPU per pass", rounds: ROUNDS, cases: {} };
  const summary = (values, digits) => {
    const s = spread(values);
    return { median: round(median(values), digits), min: round(s.min, digits), max: round(s.max, digits) };
  };
  if (THROUGHPUT) {
    const origin = await startOriginThread();
    onCleanup(() => origin.close());
    const originUrl = `http://127.0.0.1:${origin.port}`;
    const bare = await startWorker({ name: "ab-bare", scriptPath: join(here, "bare-worker.js"), bindings: { ORIGIN_URL: originUrl }, compat });
    const gateways = { base: await startBuild("base", bundles.base, { ORIGIN_URL: originUrl }), new: await startBuild("new", bundles.new, { ORIGIN_URL: originUrl }) };
    const get = (url, path, headers, expect = 200, kind = "get") => ({ url, kind, path, headers, expect, connections: CONNECTIONS });
    const cases = {
      key: { baseline: get(bare.url, PATH), of: (gw) => get(gw.url, PATH, gw.hot) },
      rate_limited: { baseline: get(bare.url, "/bench/local"), of: (gw) => get(gw.url, PATH, gw.exhausted, 429) },
      invalid_key: { baseline: get(bare.url, "/bench/local", undefined, 200, "flood"), of: (gw) => get(gw.url, PATH, undefined, 401, "flood") },
    };
    const specs = {};
    for (const [name, c] of Object.entries(cases)) {
      specs[`${name}:bare`] = c.baseline;
      specs[`${name}:base`] = c.of(gateways.base);
      specs[`${name}:new`] = c.of(gateways.new);
    }
    for (const spec of Object.values(specs)) await runLoad({ ...spec, durationS: 2 });
    const rps = Object.fromEntries(Object.keys(specs).map((n) => [n, []]));
    for (let r = 1; r <= ROUNDS; r++) {
      for (const [name, spec] of Object.entries(specs)) {
        const res = await runLoad({ ...spec, durationS: DURATION_S });
        if ((res.status[spec.expect] ?? 0) < 0.99 * res.responses) throw new Error(`${name}: ${JSON.stringify(res.status)}`);
        rps[name].push(res.requests_per_s);
      }
      console.log(`round ${r}: ${Object.entries(rps).map(([n, v]) => `${n} ${v.at(-1)}`).join(", ")} req/s`);
    }
    for (const name of Object.keys(cases)) {
      const [bareRps, baseRps, newRps] = ["bare", "base", "new"].map((v) => rps[`${name}:${v}`]);
      const baseOwn = ownUsPerRound(baseRps, bareRps);
      const newOwn = ownUsPerRound(newRps, bareRps);
      out.cases[name] = { base_us: summary(baseOwn, 1), new_us: summary(newOwn, 1), saved_us: summary(baseOwn.map((v, i) => v - newOwn[i]), 1) };
    }
  } else {
    const gateways = {
      base: await startBuild("base", join(dirs.base, "loop-worker.js"), { ORIGIN_URL: "http://origin.stub" }),
      new: await startBuild("new", join(dirs.new, "loop-worker.js"), { ORIGIN_URL: "http://origin.stub" }),
    };
    const cases = {
      key: { headers: (gw) => gw.hot, flood: false, expect: 200 },
      rate_limited: { headers: (gw) => gw.exhausted, flood: false, expect: 429 },
      invalid_key: { headers: () => ({}), flood: true, expect: 401 },
    };
    /** µs of the workerd's CPU per pass over one batch. */
    const batch = async (gw, c, check = true) => {
      const before = processCpu(gw.pid);
      const status = {};
      for (let k = 0; k < BATCH; k++) {
        const res = await fetch(`${gw.url}/__bench/loop?n=${PASSES}&what=gateway${c.flood ? "&flood=1" : ""}`, { headers: c.headers(gw) });
        for (const [code, count] of Object.entries(await res.json())) status[code] = (status[code] ?? 0) + count;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
      const after = processCpu(gw.pid);
      if (check && (status[c.expect] ?? 0) !== BATCH * PASSES) throw new Error(`expected ${BATCH * PASSES} × ${c.expect}, got ${JSON.stringify(status)}`);
      return (after.schedNs - before.schedNs) / 1000 / (BATCH * PASSES);
    };
    // Warm-up: the JIT and every cache (the over-its-limit key's first requests are admitted: not checked).
    for (const c of Object.values(cases)) for (const gw of Object.values(gateways)) await batch(gw, c, false);
    const per = Object.fromEntries(Object.keys(cases).map((n) => [n, { base: [], new: [] }]));
    for (let r = 1; r <= ROUNDS; r++) {
      for (const [name, c] of Object.entries(cases)) {
        const before = await batch(gateways.base, c);
        const now = await batch(gateways.new, c);
        const after = await batch(gateways.base, c);
        per[name].base.push((before + after) / 2);
        per[name].new.push(now);
      }
      console.log(`round ${r}: ${Object.entries(per).map(([n, v]) => `${n} base ${v.base.at(-1).toFixed(1)} new ${v.new.at(-1).toFixed(1)}`).join(", ")} µs per pass`);
    }
    for (const [name, v] of Object.entries(per)) {
      out.cases[name] = { base_us: summary(v.base, 1), new_us: summary(v.new, 1), saved_us: summary(v.base.map((b, i) => b - v.new[i]), 1) };
    }
  }
} finally {
  await cleanupAll();
}
const fmt = (s, d = 1) => `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
console.log(
  [
    `${out.new} against ${out.base}, ${out.instrument}, ${out.rounds} rounds; median (min–max) over rounds. Throughput: a request's own µs over the bare Worker's; in the isolate: µs of CPU per pass.`,
    "",
    "| case | base µs | new µs | saved µs, round by round |",
    "| --- | ---: | ---: | ---: |",
    ...Object.entries(out.cases).map(([name, c]) => `| ${name} | ${fmt(c.base_us)} | ${fmt(c.new_us)} | ${fmt(c.saved_us)} |`),
  ].join("\n"),
);
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(join(here, "results", "ab.json"), `${JSON.stringify(out, null, 2)}\n`);

// `npm run bench`: what the gateway costs a request, measured as users pay.
//
//   npm run bench                        # 20 rounds of every part; writes bench/results/latest.json
//   npm run bench -- --rounds=3          # a short run (results/partial.json)
//   npm run bench -- --only=cpu,profile  # some of: cpu, throughput, latency, profile
//   npm run bench -- --rev=HEAD          # the gateway as committed at a revision, not the working tree
//   npm run bench -- --out=loaded.json   # the result under another name in bench/results/
//   npm run bench -- --base=HEAD --only=cpu --cases=key,rate_limited
//                                        # the working tree's gateway against HEAD's, side by side in one isolate
//   npm run bench -- --base=HEAD --only=latency --rate=400   # the same at a fixed rate (throughput too)
//
// How (docs/performance.md says why):
// - One workerd runs bench/cost-worker.js: the gateway's bundle
//   (`wrangler deploy --dry-run`) and its controls in one isolate, a header
//   picking the variant per request, so every variant shares the thread,
//   the heap and the origin.
// - workerd's stdout (the request log) is a file it writes itself; nothing
//   in this process reads it. workerd is pinned to CPU 0 and this process
//   (the load and the origin, each on a thread) to CPU 1 with taskset; the
//   output says so when that is not possible.
// - CPU: the isolate thread's CPU time (schedstat of workerd's main
//   thread; V8's helper threads left out) per answer, over slices of a
//   fixed number of requests on one keep-alive connection. Each round runs
//   every case of a group once in a rotated order and once in the reverse
//   order (ABBA for every pair), so a drift within the round falls on both
//   sides of each difference. No inspector is attached.
// - Throughput (closed loop) and latency (open loop at a fixed rate below
//   saturation) in the same alternating rounds, with the isolate thread's
//   share of its core in each slice (is workerd the bottleneck?).
// - Every figure is the median over rounds of a per-round difference or
//   ratio, with a bootstrap 95 % interval.
// - Profiles are a separate pass (an inspector costs the isolate time), with
//   the request log on and off.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { availableParallelism, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupAll, onCleanup } from "./lib/cleanup.mjs";
import { startClient } from "./lib/client.mjs";
import { CPU_COMPARISONS, LOAD_CASES, LOAD_COMPARISONS, costCases } from "./lib/cost-cases.mjs";
import { checkControls } from "./lib/cost-checks.mjs";
import { cpuFigures, loadFigures, markdown, targets } from "./lib/cost-report.mjs";
import { profileWhile, summariseProfile } from "./lib/cpu-profile.mjs";
import { adminToken, EXHAUSTED_TENANT, tollgateConfig, UNLIMITED_TENANT } from "./lib/gateway-config.mjs";
import { applyMigrations, buildGateway, buildGatewayAt, freePort, readCompatibility, seedTenantAndKey, startWorker, waitHealthy } from "./lib/instances.mjs";
import { benchJwt } from "./lib/jwt-tokens.mjs";
import { machineInfo } from "./lib/machine.mjs";
import { isolateThread, threadCpu, threadsByName } from "./lib/thread-cpu.mjs";
import { startOriginThread, SSE_BYTES } from "./origin.mjs";

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH, "..");
const RESULTS = join(BENCH, "results");
const STATE = join(BENCH, ".state");
const arg = (name) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const PARTS = ["cpu", "throughput", "latency", "profile"];
const ONLY = arg("only")?.split(",") ?? null;
if (ONLY !== null && ONLY.some((p) => !PARTS.includes(p))) throw new Error(`--only takes some of ${PARTS.join(", ")}`);
const runs = (part) => ONLY === null || ONLY.includes(part);
const ROUNDS = Number(arg("rounds") ?? 20);
const REV = arg("rev") ?? null;
const BASE = arg("base") ?? null;
const CASES = arg("cases")?.split(",") ?? null;
// With --base, throughput and latency also put the hot key of the other build beside this one's.
if (BASE !== null) {
  for (const mode of ["throughput", "latency"]) {
    LOAD_CASES[mode].push("key_base");
    LOAD_COMPARISONS[mode].push(["key", "key_base"]);
  }
}
const SETTINGS = {
  rounds: ROUNDS,
  cpu: { connections: 1, slice: { small: Number(arg("slice") ?? 400), sse: 12 }, warmupSlices: 2, settleMs: 5 },
  throughput: { connections: 8, sliceS: 1.5 },
  latency: { sliceS: 2, warmupS: 0.3, shareOfThroughput: 0.5, ratePerS: arg("rate") ? Number(arg("rate")) : null },
  profile: { seconds: 3, connections: 2 },
};
const WATCHDOG_S = 40 * 60;

const startedAt = Date.now();
function log(line) {
  console.log(`[${((Date.now() - startedAt) / 1000).toFixed(0).padStart(4)} s] ${line}`);
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** workerd on CPU 0, this process (every thread it has and will start) on CPU 1; or why not. */
function placeProcesses() {
  const cpus = availableParallelism();
  if (cpus < 2) return { pinned: false, workerdCpu: null, note: `not pinned: ${cpus} CPU available` };
  const out = spawnSync("taskset", ["-a", "-p", "-c", "1", String(process.pid)], { encoding: "utf8" });
  if (out.error || out.status !== 0) return { pinned: false, workerdCpu: null, note: `not pinned: taskset failed (${out.error?.message ?? out.stderr.trim()})` };
  return { pinned: true, workerdCpu: "0", note: `workerd pinned to CPU 0; the load and the origin (this process) to CPU 1; ${cpus} CPUs` };
}

/** The order of a round: the group's cases rotated by the round, then the same in reverse (each pair ABBA). */
function roundOrder(names, round) {
  const k = round % names.length;
  const order = [...names.slice(k), ...names.slice(0, k)];
  return [...order, ...[...order].reverse()];
}

async function startCostWorker({ name, compat, originUrl, token, config, offConfig, placement, extra = {} }) {
  const worker = await startWorker({
    name,
    scriptPath: join(BENCH, "cost-worker.js"),
    gateway: true,
    stateDir: join(STATE, name),
    compat,
    bindings: { ORIGIN_URL: originUrl, ADMIN_TOKEN: token, TOLLGATE: config, TOLLGATE_OFF: offConfig },
    stdout: join(STATE, `${name}.stdout`),
    cpu: placement.workerdCpu,
    extra,
  });
  await applyMigrations(ROOT, worker);
  await waitHealthy(worker.url);
  const keys = {
    hot: await seedTenantAndKey(worker.url, token, "bench", UNLIMITED_TENANT, "bench (hot)"),
    exhausted: await seedTenantAndKey(worker.url, token, "exhausted", EXHAUSTED_TENANT, "over its limit"),
  };
  return { worker, keys };
}

/** The CPU part: µs of the isolate thread per answer, per case and round. */
async function cpuPart({ worker, cases, client }) {
  const s = SETTINGS.cpu;
  const tid = isolateThread(worker.pid);
  const slice = async (c) => {
    const before = threadCpu(worker.pid, tid);
    const out = await client.run({ mode: "count", url: worker.url, ...c.spec, amount: s.slice[c.group], connections: s.connections });
    await sleep(s.settleMs);
    const after = threadCpu(worker.pid, tid);
    return { ns: after.ns - before.ns, waitNs: after.waitNs - before.waitNs, ticksNs: after.ticksNs - before.ticksNs, out };
  };
  const groups = {};
  for (const [name, c] of Object.entries(cases)) (groups[c.group] ??= []).push(name);
  log(`cpu: warming up ${Object.keys(cases).length} cases`);
  for (const c of Object.values(cases)) for (let i = 0; i < s.warmupSlices; i++) await slice(c);
  const perRound = Object.fromEntries(Object.keys(cases).map((n) => [n, []]));
  const totals = Object.fromEntries(Object.keys(cases).map((n) => [n, { answers: 0, unexpected: 0, status: {} }]));
  let ns = 0;
  let waitNs = 0;
  let ticksNs = 0;
  const threadsBefore = threadsByName(worker.pid);
  for (let r = 0; r < SETTINGS.rounds; r++) {
    for (const names of Object.values(groups)) {
      const sum = Object.fromEntries(names.map((n) => [n, { ns: 0, answers: 0 }]));
      for (const name of roundOrder(names, r)) {
        const c = cases[name];
        const { ns: used, waitNs: waited, ticksNs: ticks, out } = await slice(c);
        sum[name].ns += used;
        sum[name].answers += out.answers;
        ns += used;
        waitNs += waited;
        ticksNs += ticks;
        const t = totals[name];
        t.answers += out.answers;
        t.unexpected += out.answers - (out.status[c.expect] ?? 0) + out.errors;
        for (const [code, n] of Object.entries(out.status)) t.status[code] = (t.status[code] ?? 0) + n;
      }
      for (const name of names) perRound[name].push(sum[name].ns / 1000 / sum[name].answers);
    }
    log(`cpu round ${r + 1}/${SETTINGS.rounds}: ${Object.entries(perRound).map(([n, v]) => `${n} ${v.at(-1).toFixed(0)}`).join(", ")} µs`);
  }
  const threadsAfter = threadsByName(worker.pid);
  const threads = Object.fromEntries(Object.keys(threadsAfter).map((n) => [n, Math.round((threadsAfter[n] - (threadsBefore[n] ?? 0)) / 1e6)]));
  return { settings: s, per_round_us: perRound, totals, ticks_over_schedstat: Math.round((ticksNs / ns) * 1000) / 1000, isolate_waited_share: Math.round((waitNs / ns) * 1000) / 1000, thread_cpu_ms: threads };
}

/** Throughput or latency: each LOAD_CASES case per slice, in alternating rounds; with the isolate thread's share of its core. */
async function loadPart({ worker, cases, client, mode, ratePerS }) {
  const tid = isolateThread(worker.pid);
  const names = LOAD_CASES[mode];
  const figures = Object.fromEntries(names.map((n) => [n, []]));
  const run = async (name, record) => {
    const c = cases[name];
    const before = threadCpu(worker.pid, tid);
    const load0 = process.cpuUsage();
    const t0 = performance.now();
    const spec =
      mode === "throughput"
        ? { mode: "duration", durationS: SETTINGS.throughput.sliceS, connections: SETTINGS.throughput.connections }
        : { mode: "rate", ratePerS, durationS: SETTINGS.latency.sliceS, warmupS: SETTINGS.latency.warmupS };
    const out = await client.run({ url: worker.url, ...c.spec, ...spec });
    const wallNs = (performance.now() - t0) * 1e6;
    const after = threadCpu(worker.pid, tid);
    const load = process.cpuUsage(load0);
    // A wrong answer is a broken case; a request that failed (a 10 s timeout on an overloaded machine) is counted and shown.
    if ((out.status[c.expect] ?? 0) < 0.99 * out.answers || out.errors > 0.05 * (out.answers + out.errors)) throw new Error(`${mode} ${name}: ${JSON.stringify(out.status)}, ${out.errors} failed requests`);
    if (record) record.push({ errors: out.errors, requests_per_s: out.requests_per_s, p50_ms: out.latency?.p50_ms, p99_ms: out.latency?.p99_ms, isolate_busy: (after.ns - before.ns) / wallNs, isolate_waiting: (after.waitNs - before.waitNs) / wallNs, load_process_busy: ((load.user + load.system) * 1000) / wallNs });
  };
  for (const name of names) await run(name, null);
  for (let r = 0; r < SETTINGS.rounds; r++) {
    const slices = Object.fromEntries(names.map((n) => [n, []]));
    for (const name of roundOrder(names, r)) await run(name, slices[name]);
    for (const name of names) {
      const mean = (k) => slices[name].reduce((s, x) => s + x[k], 0) / slices[name].length;
      figures[name].push({ errors: slices[name].reduce((s, x) => s + x.errors, 0), requests_per_s: mean("requests_per_s"), p50_ms: mode === "latency" ? mean("p50_ms") : null, p99_ms: mode === "latency" ? mean("p99_ms") : null, isolate_busy: mean("isolate_busy"), isolate_waiting: mean("isolate_waiting"), load_process_busy: mean("load_process_busy") });
    }
    const show = (x) => (mode === "throughput" ? `${x.requests_per_s.toFixed(0)}/s (isolate busy ${(x.isolate_busy * 100).toFixed(0)} %, waiting ${(x.isolate_waiting * 100).toFixed(0)} %)` : `p50 ${x.p50_ms.toFixed(2)} p99 ${x.p99_ms.toFixed(2)} ms`);
    log(`${mode} round ${r + 1}/${SETTINGS.rounds}: ${names.map((n) => `${n} ${show(figures[n].at(-1))}`).join(", ")}`);
  }
  return figures;
}

/** The profiles: a separate workerd with an inspector, request log on, then off. */
async function profilePart({ compat, originUrl, token, placement, jwtConfig, sourceMap }) {
  const out = {};
  for (const [label, extraConfig] of [["request_log_on", {}], ["request_log_off", { request_log: "off" }]]) {
    const inspectorPort = await freePort();
    const { worker, keys } = await startCostWorker({ name: `cost-profile-${label}`, compat, originUrl, token, config: tollgateConfig("enforce", { ...jwtConfig, ...extraConfig }), offConfig: tollgateConfig("off", { ...jwtConfig, ...extraConfig }), placement, extra: { inspectorPort } });
    const cases = costCases({ keys, hotJwt: "unused" });
    const client = startClient();
    out[label] = {};
    for (const name of ["key", "rate_limited", "invalid_key", "hygienic"]) {
      const spec = { url: worker.url, ...cases[name].spec, mode: "duration", connections: SETTINGS.profile.connections };
      await client.run({ ...spec, durationS: 1 });
      const { profile, result } = await profileWhile(inspectorPort, worker.name, () => client.run({ ...spec, durationS: SETTINGS.profile.seconds }));
      out[label][name] = { requests_per_s: result.requests_per_s, status: result.status, ...summariseProfile(profile, "index.js", sourceMap, 12) };
      if (process.argv.includes("--save-profiles")) writeFileSync(join(RESULTS, `profile-${label}-${name}.cpuprofile`), JSON.stringify(profile));
      log(`profile ${label} ${name}: ${result.requests_per_s}/s, top ${out[label][name].top_self.slice(0, 3).map((t) => `${t.function} ${(t.share * 100).toFixed(1)} %`).join(", ")}`);
    }
    await client.close();
    await worker.stop();
  }
  return out;
}

async function main() {
  const watchdog = setTimeout(() => {
    console.error(`\nThe bench passed ${WATCHDOG_S} s: stopping.`);
    void cleanupAll().finally(() => process.exit(2));
  }, WATCHDOG_S * 1000);
  watchdog.unref();
  const placement = placeProcesses();
  const result = { machine: machineInfo(ROOT), load_average_before: loadavg(), placement, settings: SETTINGS, gateway_source: REV === null ? "working tree" : `git ${REV}`, cases_filter: CASES };
  log(`machine: ${result.machine.cpu_model} × ${result.machine.cpu_count}, Node ${result.machine.node}, wrangler ${result.machine.wrangler}, load average ${loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  log(placement.note);
  log(`building the gateway bundle (${result.gateway_source})`);
  const buildDir = join(BENCH, ".build");
  let bundle;
  if (REV === null) bundle = buildGateway(ROOT, buildDir);
  else {
    bundle = buildGatewayAt(ROOT, REV, buildDir).bundle;
    result.gateway_commit = spawnSync("git", ["rev-parse", "--short", REV], { cwd: ROOT, encoding: "utf8" }).stdout.trim();
  }
  // A second copy of the bundle, for `mode: "off"` beside the gateway in the same isolate (a module of its own: its own runtime).
  mkdirSync(join(buildDir, "off"), { recursive: true });
  copyFileSync(bundle, join(buildDir, "off", "index.js"));
  const baseDir = join(buildDir, "base");
  if (BASE === null) {
    mkdirSync(baseDir, { recursive: true });
    writeFileSync(join(baseDir, "index.js"), 'export { default } from "../index.js";\n');
  } else {
    log(`building the --base gateway bundle (git ${BASE})`);
    buildGatewayAt(ROOT, BASE, baseDir);
    result.base_commit = spawnSync("git", ["rev-parse", "--short", BASE], { cwd: ROOT, encoding: "utf8" }).stdout.trim();
  }
  const sourceMap = existsSync(`${bundle}.map`) ? new SourceMap(JSON.parse(readFileSync(`${bundle}.map`, "utf8"))) : null;
  const compat = readCompatibility(ROOT);
  const token = adminToken();
  mkdirSync(STATE, { recursive: true });
  const origin = await startOriginThread();
  onCleanup(() => origin.close());
  const originUrl = `http://127.0.0.1:${origin.port}`;
  const jwt = await benchJwt("bench");
  const jwtConfig = { jwt: { issuers: [jwt.issuer] } };
  const [hotJwt] = await jwt.sign("RS256", 1);

  // A part that fails is recorded as failed; the parts before it keep their figures.
  const part = async (name, measure) => {
    try {
      result[name] = await measure();
    } catch (err) {
      log(`✗ the ${name} part failed: ${err?.message ?? err}`);
      result[name] = { error: String(err?.message ?? err) };
      process.exitCode = 1;
    }
  };
  if (runs("cpu") || runs("throughput") || runs("latency")) {
    const { worker, keys } = await startCostWorker({ name: "cost", compat, originUrl, token, config: tollgateConfig("enforce", jwtConfig), offConfig: tollgateConfig("off", jwtConfig), placement });
    log(`workerd ${worker.pid} at ${worker.url}; its stdout: ${worker.stdoutPath}`);
    result.checks = await checkControls({ url: worker.url, keys, stdoutPath: worker.stdoutPath });
    for (const note of result.checks.notes) log(`check: ${note}`);
    const all = costCases({ keys, hotJwt, withBase: BASE !== null });
    const cases = CASES === null ? all : Object.fromEntries(Object.entries(all).filter(([n]) => CASES.includes(n.replace(/_base$/, ""))));
    const client = startClient();
    if (runs("cpu")) {
      await part("cpu", async () => {
        const { totals, ...cpu } = await cpuPart({ worker, cases, client });
        return { ...cpu, cases: Object.fromEntries(Object.entries(cases).map(([n, c]) => [n, { label: c.label, expect: c.expect, ...totals[n] }])), figures: cpuFigures(cpu.per_round_us, CPU_COMPARISONS, SSE_BYTES) };
      });
    }
    if (runs("throughput")) await part("throughput", async () => loadFigures(await loadPart({ worker, cases: all, client, mode: "throughput" }), "throughput"));
    if (runs("latency")) {
      const fromThroughput = result.throughput?.per_case?.key.requests_per_s.median;
      const ratePerS = SETTINGS.latency.ratePerS ?? (fromThroughput ? Math.max(50, Math.round((fromThroughput * SETTINGS.latency.shareOfThroughput) / 50) * 50) : 500);
      log(`latency at ${ratePerS} requests/s`);
      await part("latency", async () => ({ rate_per_s: ratePerS, ...loadFigures(await loadPart({ worker, cases: all, client, mode: "latency", ratePerS }), "latency") }));
    }
    await client.close();
    await worker.stop();
  }
  if (runs("profile")) await part("profiles", () => profilePart({ compat, originUrl, token, placement, jwtConfig, sourceMap }));

  result.idle = result.load_average_before[0] < 0.5 && (result.cpu?.isolate_waited_share ?? 0) < 0.1;
  result.targets = targets(result);
  result.load_average_after = loadavg();
  result.total_runtime_s = Math.round((Date.now() - startedAt) / 1000);
  mkdirSync(RESULTS, { recursive: true });
  const full = ONLY === null && CASES === null && BASE === null && ROUNDS >= 20;
  const file = arg("out") ?? (full ? "latest.json" : "partial.json");
  writeFileSync(join(RESULTS, file), `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\n${markdown(result)}`);
  log(`wrote bench/results/${file}`);
}

try {
  await main();
} catch (err) {
  console.error(`\n✗ bench failed: ${err?.stack ?? err}`);
  process.exitCode = 1;
} finally {
  await cleanupAll();
}

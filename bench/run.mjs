// `npm run bench`: every figure of docs/performance.md, on 127.0.0.1 only,
// each part bounded in count or time, every process it starts stopped on the
// way out (normal end, error, Ctrl-C). About 10 minutes on 2 cores, the
// engine bench included. `npm run bench -- --quick` shortens every part (for trying
// the harness; its figures are not the published ones and it writes
// bench/results/quick.json instead of latest.json).
//
//   0. the engine bench (bench/engine.mjs via `npm run bench:engine`), when present
//   1. end to end in workerd: (a) bare pass-through Worker, (b) Tollgate on a
//      GET with a cached key, (c) Tollgate on a PUT upload with a quota,
//      (d) Tollgate with mode "off", (e) (b) without the request log,
//      (f) (d) without the request log, and two controls: (g) the bare
//      Worker doing only what the contract asks of (b) (headers, RateLimit
//      headers, waitUntil, the log line), (h) the same without the line;
//      and the refusals by throughput: (r) a 429 and (u) a 401 from (b)'s
//      gateway against the bare Worker answering by itself ((l), and (lf)
//      with the flood's random headers), (p) the bare Worker answering the
//      same 429 and (q) the same 401 after the same HMAC check of the key;
//      interleaved rounds, throughput (closed loop) then latency (open loop
//      at one fixed rate)
//   2. the gateway's own CPU per request (workerd CPU time / answers, less
//      the bare Worker's): a hot key, a hot JWT, an anonymous caller, a 429,
//      a 401, the first request of a new JWT per algorithm, a 100 KB SSE
//      stream with and without response_charge (bench/lib/gateway-cpu.mjs)
//   3. D1 queries and Durable Object calls per 1,000 requests in (b) and (c)
//   4. abuse: 20,000 random keys from random addresses, a legitimate probe
//   5. CPU profiles of (b), a 429, a 401 and (d), to say where their time goes
//   6. streams: messages/s through the gateway against a direct connection,
//      and the isolate's heap per open stream (bench/lib/streams.mjs; alone:
//      `npm run bench:streams`)
//   7. bench/results/latest.json, bench/results/latency.svg, a Markdown summary
//
// `--only=cpu,profile` (any of engine, e2e, cpu, counts, abuse, profile,
// streams) runs those parts alone and writes bench/results/partial.json.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { SourceMap } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { tsImport } from "tsx/esm/api";
import { bareControl, runAbuse } from "./lib/abuse.mjs";
import { cleanupAll, onCleanup } from "./lib/cleanup.mjs";
import { runCounts } from "./lib/counts.mjs";
import { profileWhile, summariseProfile } from "./lib/cpu-profile.mjs";
import { runEndToEnd } from "./lib/e2e.mjs";
import { adminToken, EXHAUSTED_TENANT, LIMITED_KEY_LIMIT, LIMITED_TENANT, tollgateConfig, UNLIMITED_TENANT } from "./lib/gateway-config.mjs";
import { applyMigrations, buildGateway, freePort, readCompatibility, seedTenantAndKey, startWorker, waitHealthy } from "./lib/instances.mjs";
import { runLoad } from "./lib/load.mjs";
import { machineInfo } from "./lib/machine.mjs";
import { CPU_SETTINGS, cpuSummary, cpuTargets, runGatewayCpu } from "./lib/gateway-cpu.mjs";
import { benchJwt } from "./lib/jwt-tokens.mjs";
import { evaluateTargets, markdownSummary } from "./lib/report.mjs";
import { latencySvg } from "./lib/svg.mjs";
import { benchStreams, STREAMS_SETTINGS, streamsSummary } from "./lib/streams.mjs";
import { startOriginThread } from "./origin.mjs";

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH, "..");
const RESULTS = join(BENCH, "results");
const STATE = join(BENCH, ".state");
const BUILD = join(BENCH, ".build");
const QUICK = process.argv.includes("--quick");
const PARTS = ["engine", "e2e", "cpu", "counts", "abuse", "profile", "streams"];
const ONLY = process.argv.find((a) => a.startsWith("--only="))?.slice("--only=".length).split(",") ?? null;
if (ONLY !== null && ONLY.some((p) => !PARTS.includes(p))) throw new Error(`--only takes some of ${PARTS.join(", ")}`);
const runs = (part) => ONLY === null || ONLY.includes(part);
/** `--save-profiles`: also write each raw profile to bench/results/profile-<case>.cpuprofile (for DevTools; not committed). */
const SAVE_PROFILES = process.argv.includes("--save-profiles");
/** The whole run stops itself (cleanly) past this. */
const WATCHDOG_S = 15 * 60;
const ENGINE_TIMEOUT_S = 8 * 60;

const SETTINGS = QUICK
  ? {
      e2e: { connections: 8, warmupS: 1, durationS: 2, rounds: 3, latencyRatePerS: 400, latencyDurationS: 2, latencyRounds: 3 },
      counts: { connections: 8, bDurationS: 3, uploads: 200, dedupUploads: 100, dedupNames: 20 },
      abuse: { floodRequests: 4000, floodConnections: 32, floodMaxS: 60, probeRatePerS: 50, probeAloneS: 3 },
      cpu: CPU_SETTINGS.quick,
      profileS: 2,
    }
  : {
      e2e: { connections: 8, warmupS: 2, durationS: 4, rounds: 3, latencyRatePerS: 400, latencyDurationS: 10, latencyRounds: 3 },
      counts: { connections: 8, bDurationS: 12, uploads: 1000, dedupUploads: 300, dedupNames: 50 },
      abuse: { floodRequests: 20_000, floodConnections: 32, floodMaxS: 120, probeRatePerS: 50, probeAloneS: 10 },
      cpu: CPU_SETTINGS.full,
      profileS: 5,
    };

const startedAt = Date.now();
function log(line) {
  const s = ((Date.now() - startedAt) / 1000).toFixed(0).padStart(4);
  console.log(`[${s} s] ${line}`);
}

/** Runs `npm run bench:engine` when bench/engine.mjs exists; its figures come from bench/results/engine.json. */
async function engineBench() {
  if (!existsSync(join(BENCH, "engine.mjs"))) {
    log("engine: bench/engine.mjs is not there yet — skipped");
    return { skipped: "bench/engine.mjs does not exist yet" };
  }
  log("engine: npm run bench:engine");
  const t0 = Date.now();
  const child = spawn("npm", ["run", "--silent", "bench:engine"], { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"], detached: true });
  const killGroup = () => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  const unregister = onCleanup(killGroup);
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => {
      killGroup();
      resolve("timeout");
    }, ENGINE_TIMEOUT_S * 1000);
    child.on("exit", (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  unregister();
  const elapsed_s = Math.round((Date.now() - t0) / 100) / 10;
  const file = join(RESULTS, "engine.json");
  if (code !== 0) return { skipped: `npm run bench:engine ended with ${code}`, elapsed_s };
  if (!existsSync(file) || statSync(file).mtimeMs < t0) return { skipped: "bench:engine did not write bench/results/engine.json", elapsed_s };
  return { elapsed_s, results: JSON.parse(readFileSync(file, "utf8")) };
}

async function startGateway(name, bundle, compat, originUrl, token, mode = "enforce", extra = {}, config = {}) {
  const worker = await startWorker({
    name,
    scriptPath: bundle,
    gateway: true,
    stateDir: join(STATE, name),
    compat,
    bindings: { ORIGIN_URL: originUrl, ADMIN_TOKEN: token, TOLLGATE: tollgateConfig(mode, config) },
    extra,
  });
  await applyMigrations(ROOT, worker);
  await waitHealthy(worker.url);
  return worker;
}

async function main() {
  const watchdog = setTimeout(() => {
    console.error(`\nThe bench passed ${WATCHDOG_S} s: stopping.`);
    void cleanupAll().finally(() => process.exit(2));
  }, WATCHDOG_S * 1000);
  watchdog.unref();

  const result = { quick: QUICK, machine: machineInfo(ROOT), settings: SETTINGS };
  log(`machine: ${result.machine.cpu_model} × ${result.machine.cpu_count}, ${result.machine.total_memory_mib} MiB, Node ${result.machine.node}, wrangler ${result.machine.wrangler}`);
  if (runs("engine")) result.engine = await engineBench();

  log("building the gateway bundle (wrangler deploy --dry-run)");
  const bundle = buildGateway(ROOT, BUILD);
  const sourceMap = existsSync(`${bundle}.map`) ? new SourceMap(JSON.parse(readFileSync(`${bundle}.map`, "utf8"))) : null;
  const compat = readCompatibility(ROOT);
  const token = adminToken();
  const origin = await startOriginThread();
  onCleanup(() => origin.close());
  const originUrl = `http://127.0.0.1:${origin.port}`;
  log(`origin on ${originUrl}`);
  // A static-key JWT issuer in every gateway's config; its tokens name the tenant "bench".
  const jwt = await benchJwt("bench");
  const withJwt = { jwt: { issuers: [jwt.issuer] } };

  // 1. End to end.
  if (runs("e2e")) {
    const bare = await startWorker({ name: "bare", scriptPath: join(BENCH, "bare-worker.js"), bindings: { ORIGIN_URL: originUrl }, compat });
    const gateway = await startGateway("gateway", bundle, compat, originUrl, token, "enforce", {}, withJwt);
    const off = await startGateway("gateway-off", bundle, compat, originUrl, token, "off", {}, withJwt);
    const noLog = await startGateway("gateway-no-log", bundle, compat, originUrl, token, "enforce", {}, { ...withJwt, request_log: false });
    const offNoLog = await startGateway("gateway-off-no-log", bundle, compat, originUrl, token, "off", {}, { ...withJwt, request_log: false });
    const contract = await startWorker({ name: "bare-contract", scriptPath: join(BENCH, "bare-worker.js"), bindings: { ORIGIN_URL: originUrl, CONTRACT: "log" }, compat });
    const contractNoLog = await startWorker({ name: "bare-contract-no-log", scriptPath: join(BENCH, "bare-worker.js"), bindings: { ORIGIN_URL: originUrl, CONTRACT: "no-log" }, compat });
    const key = await seedTenantAndKey(gateway.url, token, "bench", UNLIMITED_TENANT, "bench (b, c)");
    const noLogKey = await seedTenantAndKey(noLog.url, token, "bench", UNLIMITED_TENANT, "bench (e)");
    const exhausted = await seedTenantAndKey(gateway.url, token, "exhausted", EXHAUSTED_TENANT, "over its limit (r)");
    const auth = { authorization: `Bearer ${key}` };
    const e = SETTINGS.e2e;
    log(`end to end: (a) ${bare.url}, (b, c) ${gateway.url}, (d) ${off.url}, (e) ${noLog.url}, (f) ${offNoLog.url}, (g) ${contract.url}, (h) ${contractNoLog.url}, refusals (l, lf, p, q on (a); r, u on (b)); throughput ${e.rounds} rounds × 14 targets × ${e.durationS} s, latency ${e.latencyRounds} rounds × 3 targets × ${e.latencyDurationS} s`);
    result.end_to_end = await runEndToEnd(
      {
        a: { url: bare.url },
        b: { url: gateway.url, headers: auth },
        c: { url: gateway.url, headers: auth },
        d: { url: off.url, headers: auth },
        e: { url: noLog.url, headers: { authorization: `Bearer ${noLogKey}` } },
        f: { url: offNoLog.url, headers: auth },
        g: { url: contract.url, headers: auth },
        h: { url: contractNoLog.url, headers: auth },
        refusals: { exhaustedHeaders: { authorization: `Bearer ${exhausted}` } },
      },
      SETTINGS.e2e,
      log,
    );
    await contractNoLog.stop();
    await contract.stop();
    await offNoLog.stop();
    await noLog.stop();
    await off.stop();
    await gateway.stop();
    await bare.stop();
  }

  // 2. The gateway's own CPU per request.
  if (runs("cpu")) {
    const bare = await startWorker({ name: "bare-cpu", scriptPath: join(BENCH, "bare-worker.js"), bindings: { ORIGIN_URL: originUrl }, compat });
    // TOLLGATE_BENCH_CPU_REQUEST_LOG=off measures the same cases without the request-log line (a diagnostic: what the line costs each answer).
    const cpuConfig = process.env.TOLLGATE_BENCH_CPU_REQUEST_LOG === "off" ? { ...withJwt, request_log: false } : withJwt;
    const gateway = await startGateway("gateway-cpu", bundle, compat, originUrl, token, "enforce", {}, cpuConfig);
    const hot = await seedTenantAndKey(gateway.url, token, "bench", UNLIMITED_TENANT, "bench (cpu)");
    const exhausted = await seedTenantAndKey(gateway.url, token, "exhausted", EXHAUSTED_TENANT, "over its limit (cpu)");
    const c = SETTINGS.cpu;
    log(`gateway CPU per request: ${c.rounds} rounds × ${c.durationS} s per case, workerd CPU time per answer (bare ${bare.url}, gateway ${gateway.url})`);
    const contract = await startWorker({ name: "bare-cpu-contract", scriptPath: join(BENCH, "bare-worker.js"), bindings: { ORIGIN_URL: originUrl, CONTRACT: "log" }, compat });
    result.gateway_cpu = await runGatewayCpu({ bare, contract, gateway, keys: { hot, exhausted }, jwt }, c, log);
    await contract.stop();
    await gateway.stop();
    await bare.stop();
  }

  // 3. I/O counts.
  if (runs("counts")) {
    log("counting D1 queries and Durable Object calls (bench/count-worker.js around the same bundle)");
    const counter = await startGateway("count", join(BENCH, "count-worker.js"), compat, originUrl, token);
    const key = await seedTenantAndKey(counter.url, token, "bench", UNLIMITED_TENANT, "bench (counts)");
    result.counts = await runCounts(counter.url, { authorization: `Bearer ${key}` }, SETTINGS.counts, log);
    await counter.stop();
  }

  // 4. Abuse. The gateway runs inside the counting wrapper, so the flood's
  // D1 lookups are counted too (the wrapper adds a function call per D1 or
  // Durable Object call, nothing per request otherwise).
  if (runs("abuse")) {
    log(`abuse: ${SETTINGS.abuse.floodRequests} requests with fresh random keys and addresses; legitimate probe at ${SETTINGS.abuse.probeRatePerS}/s`);
    const inspectorPort = await freePort();
    const target = await startGateway("abuse", join(BENCH, "count-worker.js"), compat, originUrl, token, "enforce", { inspectorPort });
    const key = await seedTenantAndKey(target.url, token, "legit", LIMITED_TENANT, "legitimate (abuse)");
    result.abuse = await runAbuse(target, inspectorPort, key, SETTINGS.abuse, log);
    result.abuse.legitimate_key_limit = LIMITED_KEY_LIMIT;
    const { LimiterTable } = await tsImport("../src/engine/limiter-table.ts", import.meta.url);
    result.abuse.memory.limiter_table_bytes = new LimiterTable(16).byteSize;
    await target.stop();
    log("abuse control: the bare Worker's memory over the same number of requests");
    const controlPort = await freePort();
    const bare = await startWorker({ name: "bare-control", scriptPath: join(BENCH, "bare-worker.js"), bindings: { ORIGIN_URL: originUrl }, compat, extra: { inspectorPort: controlPort } });
    result.abuse.bare_control = await bareControl(bare, controlPort, SETTINGS.abuse);
    await bare.stop();
  }

  // 5. Where the time goes: a CPU profile of (b), and of the two refusals.
  if (runs("profile")) {
    const inspectorPort = await freePort();
    const profiled = await startGateway("profiled", bundle, compat, originUrl, token, "enforce", { inspectorPort });
    const key = await seedTenantAndKey(profiled.url, token, "bench", UNLIMITED_TENANT, "bench (profile)");
    const exhausted = await seedTenantAndKey(profiled.url, token, "exhausted", EXHAUSTED_TENANT, "over its limit (profile)");
    const base = { url: profiled.url, kind: "get", path: "/bench/item?x=1", connections: SETTINGS.e2e.connections };
    const cases = {
      key: { ...base, headers: { authorization: `Bearer ${key}` } },
      rate_limited: { ...base, headers: { authorization: `Bearer ${exhausted}` } },
      invalid_key: { ...base, kind: "flood" },
    };
    result.profiles = {};
    for (const [name, spec] of Object.entries(cases)) {
      await runLoad({ ...spec, durationS: 2 });
      log(`profiling ${name} for ${SETTINGS.profileS} s through the inspector`);
      const { profile, result: load } = await profileWhile(inspectorPort, "profiled", () => runLoad({ ...spec, durationS: SETTINGS.profileS }));
      const entry = { seconds: SETTINGS.profileS, requests_per_s: load.requests_per_s, status: load.status, summary: summariseProfile(profile, "index.js", sourceMap, 20) };
      if (name === "key") result.profile = entry;
      else result.profiles[name] = entry;
      if (SAVE_PROFILES) writeFileSync(join(RESULTS, `profile-${name}.cpuprofile`), JSON.stringify(profile));
    }
    await profiled.stop();
    // (d): what mode "off" still does per request (the forward alone).
    const offInspector = await freePort();
    const off = await startGateway("profiled-off", bundle, compat, originUrl, token, "off", { inspectorPort: offInspector });
    const offSpec = { url: off.url, kind: "get", path: "/bench/item?x=1", connections: SETTINGS.e2e.connections };
    await runLoad({ ...offSpec, durationS: 2 });
    log(`profiling off for ${SETTINGS.profileS} s through the inspector`);
    const { profile: offProfile, result: offLoad } = await profileWhile(offInspector, "profiled-off", () => runLoad({ ...offSpec, durationS: SETTINGS.profileS }));
    result.profiles.off = { seconds: SETTINGS.profileS, requests_per_s: offLoad.requests_per_s, status: offLoad.status, summary: summariseProfile(offProfile, "index.js", sourceMap, 20) };
    if (SAVE_PROFILES) writeFileSync(join(RESULTS, "profile-off.cpuprofile"), JSON.stringify(offProfile));
    await off.stop();
  }

  // 6. Streams.
  if (runs("streams")) result.streams = await benchStreams({ root: ROOT, bundle, compat, token, stateDir: STATE, settings: QUICK ? STREAMS_SETTINGS.quick : STREAMS_SETTINGS.full, log });

  result.targets = [...evaluateTargets(result), ...(result.gateway_cpu ? cpuTargets(result.gateway_cpu) : [])];
  result.total_runtime_s = Math.round((Date.now() - startedAt) / 1000);
  mkdirSync(RESULTS, { recursive: true });
  const jsonName = ONLY !== null ? "partial.json" : QUICK ? "quick.json" : "latest.json";
  writeFileSync(join(RESULTS, jsonName), `${JSON.stringify(result, null, 2)}\n`);
  if (!QUICK && ONLY === null) {
    const e = result.end_to_end.settings;
    writeFileSync(
      join(RESULTS, "latency.svg"),
      latencySvg(
        result.end_to_end.latency.runs,
        `open loop at ${e.latency_rate_per_s} req/s each, medians of ${e.latencyRounds} interleaved rounds × ${e.latencyDurationS} s · ${result.machine.cpu_count} cores shared with the load generator · ${result.machine.date.slice(0, 10)}`,
      ),
    );
  }
  console.log(`\n${markdownSummary(result)}`);
  if (result.gateway_cpu) console.log(`\n${cpuSummary(result.gateway_cpu)}`);
  if (result.streams) console.log(`\n${streamsSummary(result.streams)}`);
  log(`wrote bench/results/${jsonName}${QUICK || ONLY !== null ? "" : " and bench/results/latency.svg"}`);
}

try {
  await main();
} catch (err) {
  console.error(`\n✗ bench failed: ${err?.stack ?? err}`);
  process.exitCode = 1;
} finally {
  await cleanupAll();
}

// `npm run bench:pipeline` (node bench/pipeline-loop.mjs [--rounds=N]
// [--passes=N] [--batch=N]): what one pass through Tollgate costs inside the
// isolate. Each gateway is the real bundle behind bench/loop-worker.js, whose
// origin answers inside the same isolate; one HTTP request to it runs
// `passes` requests through the Worker's `fetch` in a loop, so the workerd's
// CPU time over a batch of such requests, divided by the passes, is the cost
// of a pass: the router, the checks, the settlement, the answer's headers and
// the log line, without the socket, the HTTP parsing and the network fetch.
// The same loop with no gateway (the origin's answer copied, as a
// pass-through Worker hands it on) is measured in the same process just
// before each case; a case's cost is its µs per pass less that loop's,
// median over rounds. Even batches of 4,000 passes spread widely on the
// 2-core VM the figures in docs/performance.md come from (GC cycles land in
// some batches and not others): read the medians.
//
// Cases: a cached key admitted under limits that never refuse ((b)), the
// same without the request log ((e)), `mode: "off"` with and without it
// ((d), (f)), a 429 (a key over its limit) and a 401 (made-up keys from
// fresh addresses). A benchmark, never a timed test; prints a Markdown
// table and writes bench/results/pipeline-loop.json.
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupAll, onCleanup } from "./lib/cleanup.mjs";
import { processCpu } from "./lib/cpu-time.mjs";
import { adminToken, EXHAUSTED_TENANT, tollgateConfig, UNLIMITED_TENANT } from "./lib/gateway-config.mjs";
import { applyMigrations, buildGateway, readCompatibility, seedTenantAndKey, startWorker, waitHealthy } from "./lib/instances.mjs";
import { median, round, spread } from "./lib/stats.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, "..");
const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const ROUNDS = arg("rounds", 10);
const PASSES = arg("passes", 500);
/** Loop requests per case and round (--batch=N). */
const BATCH = arg("batch", 8);

/** The end-to-end bench's config, with or without the request log. */
function configFor(mode, requestLog) {
  return tollgateConfig(mode, requestLog ? {} : { request_log: false });
}

async function startLoopGateway(name, mode, requestLog, token, compat) {
  const worker = await startWorker({
    name,
    scriptPath: join(here, "loop-worker.js"),
    gateway: true,
    stateDir: join(here, ".state", name),
    compat,
    bindings: { ORIGIN_URL: "http://origin.stub", ADMIN_TOKEN: token, TOLLGATE: configFor(mode, requestLog) },
  });
  await applyMigrations(ROOT, worker);
  await waitHealthy(worker.url);
  return worker;
}

let out;
try {
  buildGateway(ROOT, join(here, ".build"));
  const compat = readCompatibility(ROOT);
  const token = adminToken();
  const g = {
    enforce: await startLoopGateway("loop-enforce", "enforce", true, token, compat),
    enforceNoLog: await startLoopGateway("loop-enforce-no-log", "enforce", false, token, compat),
    off: await startLoopGateway("loop-off", "off", true, token, compat),
    offNoLog: await startLoopGateway("loop-off-no-log", "off", false, token, compat),
  };
  const keyOf = async (worker, tenant, body) => ({ authorization: `Bearer ${await seedTenantAndKey(worker.url, token, tenant, body, "loop")}` });
  const hot = await keyOf(g.enforce, "bench", UNLIMITED_TENANT);
  const exhausted = await keyOf(g.enforce, "exhausted", EXHAUSTED_TENANT);
  const hotNoLog = await keyOf(g.enforceNoLog, "bench", UNLIMITED_TENANT);
  const cases = {
    key: { worker: g.enforce, headers: hot, expect: 200, label: "(b) cached key, limits never refuse" },
    key_no_log: { worker: g.enforceNoLog, headers: hotNoLog, expect: 200, label: "(e) the same, request_log off" },
    off: { worker: g.off, headers: hot, expect: 200, label: '(d) mode "off"' },
    off_no_log: { worker: g.offNoLog, headers: hot, expect: 200, label: '(f) mode "off", request_log off' },
    rate_limited: { worker: g.enforce, headers: exhausted, expect: 429, label: "a 429 (a key over its limit)" },
    invalid_key: { worker: g.enforce, headers: {}, flood: true, expect: 401, label: "a 401 (made-up keys, fresh addresses)" },
  };
  const loopUrl = (worker, what, flood) => `${worker.url}/__bench/loop?n=${PASSES}&what=${what}${flood ? "&flood=1" : ""}`;
  const batch = async (worker, what, headers, flood, expect, check = true) => {
    const before = processCpu(worker.pid);
    const status = {};
    for (let k = 0; k < BATCH; k++) {
      const res = await fetch(loopUrl(worker, what, flood), { headers });
      for (const [code, count] of Object.entries(await res.json())) status[code] = (status[code] ?? 0) + count;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
    const after = processCpu(worker.pid);
    const answers = BATCH * PASSES;
    if (check && (status[expect] ?? 0) !== answers) throw new Error(`${what}: expected ${answers} × ${expect}, got ${JSON.stringify(status)}`);
    return (after.schedNs - before.schedNs) / 1000 / answers;
  };
  // Warm-up: the JIT and every cache.
  for (const c of Object.values(cases)) {
    // (The over-its-limit key's first request is admitted: warm-up answers are not checked.)
    await batch(c.worker, "gateway", c.headers, c.flood, c.expect, false);
    await batch(c.worker, "bare", c.headers, c.flood, 200, false);
  }
  const own = Object.fromEntries(Object.keys(cases).map((n) => [n, []]));
  const bareUs = [];
  for (let r = 1; r <= ROUNDS; r++) {
    for (const [name, c] of Object.entries(cases)) {
      const base = await batch(c.worker, "bare", c.headers, c.flood, 200);
      const us = await batch(c.worker, "gateway", c.headers, c.flood, c.expect);
      own[name].push(us - base);
      bareUs.push(base);
    }
    console.log(`round ${r}: ${Object.entries(own).map(([n, v]) => `${n} ${v.at(-1).toFixed(1)}`).join(", ")} µs per pass`);
  }
  out = { at: new Date().toISOString(), load_average: os.loadavg(), rounds: ROUNDS, passes_per_request: PASSES, batch: BATCH, bare_loop_us_per_pass: round(median(bareUs), 1), cases: {} };
  for (const [name, values] of Object.entries(own)) {
    const s = spread(values);
    out.cases[name] = { label: cases[name].label, own_us_per_pass: round(median(values), 1), min: round(s.min, 1), max: round(s.max, 1), per_round: values.map((v) => round(v, 1)) };
  }
  const k = out.cases.key.own_us_per_pass;
  out.ratios = {
    rate_limited_vs_key: round(out.cases.rate_limited.own_us_per_pass / k, 3),
    invalid_key_vs_key: round(out.cases.invalid_key.own_us_per_pass / k, 3),
  };
} finally {
  await cleanupAll();
}
const lines = [
  `The loop with no gateway: ${out.bare_loop_us_per_pass} µs of workerd CPU per pass (a Request built, the stub's answer copied and read).`,
  "",
  "| case | µs per pass over the bare loop, median (min–max) |",
  "| --- | ---: |",
  ...Object.values(out.cases).map((c) => `| ${c.label} | ${c.own_us_per_pass} (${c.min}–${c.max}) |`),
  "",
  `A 429 against (b): ${out.ratios.rate_limited_vs_key}×; a 401: ${out.ratios.invalid_key_vs_key}×.`,
];
console.log(lines.join("\n"));
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(join(here, "results", "pipeline-loop.json"), `${JSON.stringify(out, null, 2)}\n`);

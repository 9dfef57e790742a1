// Global limits across isolates (issue 12). For each K, one
// Miniflare runs K copies of the gateway bundle — each Worker its own
// isolate, with its own limiter table and leases — plus one more copy that
// hosts the LimitLedger Durable Object they all bind to (as a deployment's
// isolates share one object per subject). One anonymous caller's requests are
// spread at random over the K copies, each caller with its own limit through
// a caller override (so every phase starts from a fresh ledger object).
//
// Per K:
//   flood   4× the limit for `flood.durationS`: the most admitted in any 1 s
//           and any W against the exact GCRA's B + Δ·C/W and the bound's
//           + L·C/W (admission times are the stamp origin's arrival times);
//   steady  90 % of the limit, Poisson arrivals, `steady.rounds` rounds of
//           `steady.durationS`, alternating a caller whose limit is global
//           with one whose same limit is per isolate: the global caller's
//           refused share, and both callers' latency (p50, p99).
// Ledger calls come from the object's own count (LimitLedger.stats).
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { childPids, onCleanup, trackPid, untrackPid } from "./cleanup.mjs";
import { admin, freePort, HOST } from "./instances.mjs";
import { summarise } from "./latency.mjs";
import { round } from "./stats.mjs";
import { startStampOrigin } from "./stamp-origin.mjs";

const requireHere = createRequire(import.meta.url);
const requireFromWrangler = createRequire(requireHere.resolve("wrangler/package.json"));
const { Miniflare } = await import(pathToFileURL(requireFromWrangler.resolve("miniflare")).href);

export const GLOBAL_SETTINGS = {
  // A per-minute limit, the common kind: 1,200 per 60 s (20/s) with bursts of 60, so
  // L = 0.02 × 60 s = 1.2 s and the bound adds 24. A low rate, so that the flood (4×, 80/s)
  // stays well inside what K copies in one workerd serve on the 2-core machine while other
  // jobs run; the bound and the lease logic do not depend on the rate. Windows of 1 s and 5 s
  // (the bound holds for any length; a whole minute would make the run ten times longer).
  full: { ks: [2, 4, 8], limit: { count: 1200, window_s: 60, burst: 60 }, windowsMs: [1000, 5000], flood: { load: 4, durationS: 6 }, steady: { load: 0.9, durationS: 5, rounds: 2 } },
  quick: { ks: [2], limit: { count: 1200, window_s: 60, burst: 60 }, windowsMs: [1000, 5000], flood: { load: 4, durationS: 3 }, steady: { load: 0.9, durationS: 2, rounds: 1 } },
};

const MAX_OVERSHOOT = 0.02;
const MIN_LEASE_MS = 50;

function gatewayConfig() {
  return JSON.stringify({
    mode: "enforce",
    anonymous: "allow",
    // On, as deployed: the bench counts the requests it marks `ledger_error` (decided by global.on_error).
    request_log: true,
    // The callers' overrides are written before any copy serves: a long TTL keeps D1 out of the figures.
    cache_ttl_s: 3600,
    categories: { admin: { limits: { admin: [{ count: 100_000, window_s: 1 }] } }, request: { limits: { ip: [{ count: 1_000_000_000, window_s: 1 }] } } },
  });
}

/** K gateway copies and the ledger's copy in one Miniflare (one workerd process, one isolate per Worker). */
export async function startCluster({ k, bundle, compat, originPort, token, stateDir }) {
  rmSync(stateDir, { recursive: true, force: true });
  mkdirSync(stateDir, { recursive: true });
  const before = new Set(childPids("workerd"));
  const ports = [];
  for (let i = 0; i < k; i++) ports.push(await freePort());
  const common = {
    modules: true,
    modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
    scriptPath: bundle,
    ...compat,
    bindings: { ORIGIN_URL: `http://${HOST}:${originPort}`, ADMIN_TOKEN: token, TOLLGATE: gatewayConfig() },
    d1Databases: { DB: "bench-global" },
  };
  const hosted = (className) => ({ className, scriptName: "ledger", useSQLite: true });
  // Lines the Workers write that matter here, counted as they stream by (the rest is drained).
  // request_lines shows the stream is read at all (a count of 0 elsewhere is then a real 0).
  const counts = { request_lines: 0, ledger_error: 0, ledger_slow: 0, ledger_unavailable: 0 };
  const needles = { request_lines: '"event":"request"', ledger_error: '"ledger_error":true', ledger_slow: '"event":"ledger_slow"', ledger_unavailable: '"event":"ledger_unavailable"' };
  const count = (chunk) => {
    const text = String(chunk);
    for (const name of Object.keys(counts)) {
      const needle = needles[name];
      for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) counts[name]++;
    }
  };
  const mf = new Miniflare({
    host: HOST,
    port: await freePort(),
    d1Persist: join(stateDir, "d1"),
    durableObjectsPersist: join(stateDir, "do"),
    handleRuntimeStdio(stdout, stderr) {
      stdout.on("data", count);
      stderr.on("data", count);
    },
    workers: [
      {
        name: "ledger",
        ...common,
        durableObjects: {
          LIMIT_LEDGER: { className: "LimitLedger", useSQLite: true },
          TENANT_QUOTA: { className: "TenantQuota", useSQLite: true },
          ORG_QUOTA: { className: "OrgQuota", useSQLite: true },
        },
      },
      ...ports.map((port, i) => ({
        name: `gw${i}`,
        ...common,
        durableObjects: { LIMIT_LEDGER: hosted("LimitLedger"), TENANT_QUOTA: hosted("TenantQuota"), ORG_QUOTA: hosted("OrgQuota") },
        unsafeDirectSockets: [{ host: HOST, port }],
      })),
    ],
  });
  let stopped = false;
  let pids = [];
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await mf.dispose().catch(() => {});
    for (const pid of pids) untrackPid(pid);
  };
  const unregister = onCleanup(stop);
  await mf.ready;
  pids = childPids("workerd").filter((pid) => !before.has(pid));
  for (const pid of pids) trackPid(pid);
  return {
    mf,
    counts,
    urls: ports.map((port) => `http://${HOST}:${port}`),
    stop: async () => {
      unregister();
      await stop();
    },
  };
}

export async function applyMigrations(root, mf) {
  const db = await mf.getD1Database("DB", "ledger");
  const dir = join(root, "migrations");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
    const statements = readFileSync(join(dir, file), "utf8")
      .split("--> statement-breakpoint")
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    await db.batch(statements.map((s) => db.prepare(s)));
  }
}

function runLoad(spec) {
  const worker = new Worker(new URL("./global-load-thread.mjs", import.meta.url), { workerData: spec });
  const unregister = onCleanup(() => worker.terminate());
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new Error("a global-bench load did not finish in time"));
    }, (spec.durationS + 30) * 1000);
    worker.once("message", (msg) => {
      clearTimeout(timer);
      unregister();
      void worker.terminate();
      resolve(msg);
    });
    worker.once("error", (err) => {
      clearTimeout(timer);
      unregister();
      reject(err);
    });
  });
}

/** The most stamps in any window [a, a + deltaMs] (stamps sorted). */
function mostInWindow(stamps, deltaMs) {
  let most = 0;
  for (let i = 0, j = 0; i < stamps.length; i++) {
    if (j < i) j = i;
    while (j + 1 < stamps.length && stamps[j + 1] - stamps[i] <= deltaMs) j++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

async function ledgerCalls(mf, subject) {
  const ns = await mf.getDurableObjectNamespace("LIMIT_LEDGER", "ledger");
  const stats = await ns.get(ns.idFromName(subject)).stats();
  return stats.calls;
}

/** One K: the cluster, the callers' overrides, the flood and the steady rounds. */
async function benchK({ root, bundle, compat, token, stateDir, origin, settings, k, log }) {
  const cluster = await startCluster({ k, bundle, compat, originPort: origin.port, token, stateDir: join(stateDir, `global-k${k}`) });
  try {
    await applyMigrations(root, cluster.mf);
    const limit = settings.limit;
    const ratePerS = limit.count / limit.window_s;
    const leaseMs = Math.max(Math.ceil(MAX_OVERSHOOT * limit.window_s * 1000 - 1e-9), MIN_LEASE_MS);
    const callers = { flood: `203.0.113.${10 + k}`, global: `203.0.113.${40 + k}`, isolate: `203.0.113.${70 + k}` };
    for (const [role, ip] of Object.entries(callers)) {
      const scope = role === "isolate" ? "isolate" : "global";
      await admin(cluster.urls[0], token, "PUT", `/overrides/ip:${ip}`, { limits: { request: [{ ...limit, scope }] } });
    }
    // Warm every copy (its caches and connections) with a caller that has no override.
    await runLoad({ targets: cluster.urls, ratePerS: 20 * k, durationS: 1, poisson: false, path: "/warm", headers: { "cf-connecting-ip": "198.51.100.1", "x-bench-run": "warm" }, seed: 1 });

    const countsBefore = { ...cluster.counts };
    log(`K = ${k}: flood at ${settings.flood.load}× the limit for ${settings.flood.durationS} s`);
    const floodRun = `flood-${k}`;
    const flood = await runLoad({
      targets: cluster.urls,
      ratePerS: settings.flood.load * ratePerS,
      durationS: settings.flood.durationS,
      poisson: true,
      path: "/flood",
      headers: { "cf-connecting-ip": callers.flood, "x-bench-run": floodRun },
      seed: 1000 + k,
    });
    const stamps = (await origin.stampsOf(floodRun)).sort((a, b) => a - b);
    const windows = settings.windowsMs.map((deltaMs) => {
      const exact = limit.burst + (deltaMs * limit.count) / (limit.window_s * 1000);
      const bound = exact + (leaseMs * limit.count) / (limit.window_s * 1000);
      return { delta_ms: deltaMs, most_admitted: mostInWindow(stamps, deltaMs), exact_gcra: round(exact, 1), bound: round(bound, 1) };
    });
    const floodCalls = await ledgerCalls(cluster.mf, `ip:${callers.flood}`);
    const floodCounts = Object.fromEntries(Object.entries(cluster.counts).map(([name, n]) => [name, n - countsBefore[name]]));
    const steadyBefore = { ...cluster.counts };

    log(`K = ${k}: ${settings.steady.rounds} rounds of ${settings.steady.durationS} s at ${Math.round(settings.steady.load * 100)} % of the limit, global then isolate scope`);
    const steady = { global: { sent: 0, refused: 0, other: 0, latencies: [] }, isolate: { sent: 0, refused: 0, other: 0, latencies: [] } };
    for (let r = 0; r < settings.steady.rounds; r++) {
      for (const role of ["global", "isolate"]) {
        const out = await runLoad({
          targets: cluster.urls,
          ratePerS: settings.steady.load * ratePerS,
          durationS: settings.steady.durationS,
          poisson: true,
          path: "/steady",
          headers: { "cf-connecting-ip": callers[role], "x-bench-run": `${role}-${k}` },
          seed: 2000 + 10 * k + r,
        });
        const s = steady[role];
        s.sent += out.sent;
        s.refused += out.byStatus[429] ?? 0;
        s.other += out.sent - (out.byStatus[200] ?? 0) - (out.byStatus[429] ?? 0);
        for (const v of out.latencies) s.latencies.push(v);
      }
    }
    const steadyCalls = await ledgerCalls(cluster.mf, `ip:${callers.global}`);
    // The request log is written before the answer leaves: by now every line of the phase is in.
    await new Promise((r) => setTimeout(r, 200));
    const steadyCounts = Object.fromEntries(Object.entries(cluster.counts).map(([name, n]) => [name, n - steadyBefore[name]]));
    const steadyAdmitted = steady.global.sent - steady.global.refused - steady.global.other;
    const steadyS = settings.steady.rounds * settings.steady.durationS;
    const latency = { global: summarise(steady.global.latencies), isolate: summarise(steady.isolate.latencies) };
    return {
      k,
      flood: {
        sent: flood.sent,
        admitted: stamps.length,
        refused: flood.byStatus[429] ?? 0,
        other: flood.sent - (flood.byStatus[200] ?? 0) - (flood.byStatus[429] ?? 0),
        windows,
        ledger_calls: floodCalls,
        ledger_calls_per_1000_admitted: round((floodCalls / Math.max(1, stamps.length)) * 1000, 0),
        ledger_calls_per_s: round(floodCalls / settings.flood.durationS, 0),
        ...floodCounts,
      },
      steady: {
        sent: steady.global.sent,
        refused: steady.global.refused,
        other: steady.global.other,
        refused_share: round(steady.global.refused / Math.max(1, steady.global.sent), 4),
        isolate_refused: steady.isolate.refused,
        ledger_calls: steadyCalls,
        ledger_calls_per_1000_admitted: round((steadyCalls / Math.max(1, steadyAdmitted)) * 1000, 0),
        ledger_calls_per_s: round(steadyCalls / steadyS, 0),
        ...steadyCounts,
      },
      latency,
    };
  } finally {
    await cluster.stop();
  }
}

/** Every K in settings.ks, one after the other; everything started is stopped on the way out. */
export async function benchGlobal({ root, bundle, compat, token, stateDir, settings, log }) {
  const origin = await startStampOrigin();
  const unregister = onCleanup(() => origin.close());
  try {
    const runs = [];
    for (const k of settings.ks) runs.push(await benchK({ root, bundle, compat, token, stateDir, origin, settings, k, log }));
    const leaseMs = Math.max(Math.ceil(MAX_OVERSHOOT * settings.limit.window_s * 1000 - 1e-9), MIN_LEASE_MS);
    return { limit: settings.limit, lease_ms: leaseMs, max_overshoot: MAX_OVERSHOOT, min_lease_ms: MIN_LEASE_MS, windows_ms: settings.windowsMs, runs };
  } finally {
    unregister();
    await origin.close();
  }
}

/** The Markdown table of a run (printed, and written into docs/performance.md). */
export function globalSummary(result) {
  const { limit, lease_ms: leaseMs } = result;
  const perS = limit.count / limit.window_s;
  const lines = [
    `One caller, limit ${limit.count} per ${limit.window_s} s with bursts of ${limit.burst} (${perS}/s), \`scope: "global"\`; L = ${leaseMs} ms, so the bound adds L·C/W = ${round((leaseMs * limit.count) / (limit.window_s * 1000), 1)} to the exact GCRA's B + Δ·C/W. Requests spread at random over K gateway copies (K isolates) sharing one LimitLedger, in one Miniflare.`,
    "",
    `| K | flood: most admitted in any ${result.windows_ms[0] / 1000} s (exact / bound) | in any ${result.windows_ms[1] / 1000} s (exact / bound) | at 90 %: refused | ledger calls per 1,000 admitted (flood / 90 %) | ledger calls/s, busiest object (flood / 90 %) | latency p50 / p99, global | same limit per isolate |`,
    "| ---: | :--- | :--- | ---: | :--- | :--- | :--- | :--- |",
  ];
  for (const r of result.runs) {
    const [one, whole] = r.flood.windows;
    const pct = (share) => `${round(share * 100, 2)} %`;
    const ms = (s) => `${round(s.p50_ms, 2)} / ${round(s.p99_ms, 2)} ms`;
    lines.push(
      `| ${r.k} | ${one.most_admitted} (${one.exact_gcra} / ${one.bound}) | ${whole.most_admitted} (${whole.exact_gcra} / ${whole.bound}) | ${pct(r.steady.refused_share)} (${r.steady.refused} of ${r.steady.sent}) | ${r.flood.ledger_calls_per_1000_admitted} / ${r.steady.ledger_calls_per_1000_admitted} | ${r.flood.ledger_calls_per_s} / ${r.steady.ledger_calls_per_s} | ${ms(r.latency.global)} | ${ms(r.latency.isolate)} |`,
    );
  }
  return lines.join("\n");
}

// End to end in workerd: the same origin behind
//   (a) the bare pass-through Worker,
//   (b) Tollgate on a plain GET with a cached key and limits that never refuse,
//   (c) Tollgate on an upload route with a quota: PUT /objects/<unique name>,
//       a small body with Content-Length, a hard quota nobody reaches,
//   (d) Tollgate with mode "off" (every check skipped: the framework's and
//       the forward's cost without the gateway's checks; diagnostic),
//   (e) (b) with request_log off (the request-log line's cost; diagnostic),
//   (f) (d) with request_log off (the forward alone; diagnostic).
// Two phases, each in interleaved rounds (a, b, c, d, e, f, a, b, …) so the
// machine's noise lands on every target alike; (d), (e) and (f) run in the first
// only:
//   1. throughput: closed loop (autocannon), the same connections and
//      duration for each target; requests/s at saturation.
//   2. latency: open loop at one fixed rate for every target (the same load,
//      well under each one's capacity); p50/p99 counted from when each request
//      was due. At saturation the slower target serves fewer requests, so the
//      machine's stalls weigh more in its p99; at a fixed rate they weigh the same.
import { runLoad } from "./load.mjs";
import { median, ratioSummary, round } from "./stats.mjs";

export const UPLOAD_BODY_BYTES = 256;
/** Latency-phase answers slower than this are listed with their time in the run (runs[].slow), to see when stalls happen. */
const SLOW_MS = 20;
const PATH = "/bench/item?x=1";

function nonOk(status) {
  return Object.entries(status).filter(([code]) => Number(code) < 200 || Number(code) >= 300).reduce((t, [, n]) => t + n, 0);
}

function summariseRuns(runs) {
  return {
    requests_per_s: round(median(runs.map((r) => r.requests_per_s)), 1),
    p50_ms: round(median(runs.map((r) => r.latency.p50_ms))),
    p99_ms: round(median(runs.map((r) => r.latency.p99_ms))),
    responses: runs.reduce((s, r) => s + r.responses, 0),
    non_2xx: runs.reduce((s, r) => s + nonOk(r.status), 0),
    errors: runs.reduce((s, r) => s + r.errors + r.timeouts, 0),
    error_codes: runs.reduce((acc, r) => {
      for (const [code, n] of Object.entries(r.error_codes ?? {})) acc[code] = (acc[code] ?? 0) + n;
      return acc;
    }, {}),
  };
}

function ratiosAgainstA(runs, names, fields) {
  const out = {};
  for (const name of names.filter((n) => n !== "a")) {
    out[`${name}/a`] = {};
    for (const [label, pick] of Object.entries(fields)) {
      out[`${name}/a`][label] = ratioSummary(runs[name].map((r, i) => pick(r) / pick(runs.a[i])));
    }
  }
  return out;
}

async function interleave(specs, rounds, perRun, log, phase) {
  const names = Object.keys(specs);
  const runs = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 1; round <= rounds; round++) {
    for (const name of names) {
      const r = await runLoad({ ...specs[name], ...perRun, prefix: `${phase}-r${round}` });
      runs[name].push(r);
      log(`  ${phase} round ${round} ${name}: ${r.requests_per_s} req/s, p50 ${r.latency.p50_ms} ms, p99 ${r.latency.p99_ms} ms, status ${JSON.stringify(r.status)}${r.errors ? `, ${r.errors} errors` : ""}`);
    }
  }
  return runs;
}

/**
 * targets: {a: {url}, b: {url, headers}, c: {url, headers}, d?: {url, headers}, e?: {url, headers}, f?: {url, headers}}
 * settings: {connections, warmupS, durationS, rounds, latencyRatePerS, latencyDurationS, latencyRounds}
 */
export async function runEndToEnd(targets, settings, log) {
  const specs = {
    a: { label: "a", url: targets.a.url, kind: "get", path: PATH },
    b: { label: "b", url: targets.b.url, kind: "get", path: PATH, headers: targets.b.headers },
    c: { label: "c", url: targets.c.url, kind: "upload", bodyBytes: UPLOAD_BODY_BYTES, headers: targets.c.headers },
    ...(targets.d ? { d: { label: "d", url: targets.d.url, kind: "get", path: PATH, headers: targets.d.headers } } : {}),
    ...(targets.e ? { e: { label: "e", url: targets.e.url, kind: "get", path: PATH, headers: targets.e.headers } } : {}),
    ...(targets.f ? { f: { label: "f", url: targets.f.url, kind: "get", path: PATH, headers: targets.f.headers } } : {}),
  };
  const names = Object.keys(specs);

  for (const name of names) {
    log(`  warm-up ${name} (${settings.warmupS} s)`);
    await runLoad({ ...specs[name], connections: settings.connections, durationS: settings.warmupS, prefix: `warm-${name}` });
  }

  // 1. Throughput, closed loop.
  const tRuns = await interleave(specs, settings.rounds, { connections: settings.connections, durationS: settings.durationS }, log, "throughput");
  const throughput = Object.fromEntries(names.map((n) => [n, summariseRuns(tRuns[n])]));

  // 2. Latency at one fixed rate: at most latencyRatePerS, and at most a third
  // of the slowest target's measured capacity, so no target queues.
  const slowest = Math.min(...names.map((n) => throughput[n].requests_per_s));
  const rate = Math.max(10, Math.min(settings.latencyRatePerS, Math.floor(slowest / 3)));
  const latencySpecs = Object.fromEntries(["a", "b", "c"].map((n) => [n, specs[n]]));
  const lRuns = await interleave(latencySpecs, settings.latencyRounds, { ratePerS: rate, durationS: settings.latencyDurationS, warmupS: 0.5, keepSlowMs: SLOW_MS }, log, "latency");
  const latency = Object.fromEntries(Object.keys(latencySpecs).map((n) => [n, summariseRuns(lRuns[n])]));

  return {
    settings: { ...settings, latency_rate_per_s: rate, upload_body_bytes: UPLOAD_BODY_BYTES, upload_object_names: "unique per request (/objects/<phase>-r<round>-<n>)", order: names.join(", ") },
    throughput: {
      summary: throughput,
      ratios: ratiosAgainstA(tRuns, names, { throughput: (r) => r.requests_per_s, p50: (r) => r.latency.p50_ms, p99: (r) => r.latency.p99_ms }),
      runs: tRuns,
    },
    latency: {
      rate_per_s: rate,
      summary: latency,
      ratios: ratiosAgainstA(lRuns, Object.keys(latencySpecs), { p50: (r) => r.latency.p50_ms, p99: (r) => r.latency.p99_ms }),
      runs: lRuns,
    },
  };
}

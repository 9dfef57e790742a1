// End to end in workerd: the same origin behind
//   (a) the bare pass-through Worker,
//   (b) Tollgate on a plain GET with a cached key and limits that never refuse,
//   (c) Tollgate on an upload route with a quota: PUT /objects/<unique name>,
//       a small body with Content-Length, a hard quota nobody reaches,
//   (d) Tollgate with mode "off" (every check skipped: the framework's and
//       the forward's cost without the gateway's checks; diagnostic),
//   (e) (b) with request_log off (the request-log line's cost; diagnostic),
//   (f) (d) with request_log off (the forward alone; diagnostic),
//   (g) the bare Worker forwarding as the gateway's contract asks of (b) and
//       nothing else: the request's headers filtered, the answer's copied
//       with RateLimit headers, a waitUntil, the request-log line (a
//       control: the most a gateway keeping that contract can serve here),
//   (h) (g) without the line (against (e)).
// Two phases, each in interleaved rounds (a, b, c, d, e, f, g, h, a, b, …) so the
// machine's noise lands on every target alike; (d) to (h) run in the first
// only:
//   1. throughput: closed loop (autocannon), the same connections and
//      duration for each target; requests/s at saturation.
//   2. latency: open loop at one fixed rate for every target (the same load,
//      well under each one's capacity); p50/p99 counted from when each request
//      was due. At saturation the slower target serves fewer requests, so the
//      machine's stalls weigh more in its p99; at a fixed rate they weigh the same.
import { runLoad } from "./load.mjs";
import { median, ownUsPerRound, ratioSummary, round } from "./stats.mjs";

export const UPLOAD_BODY_BYTES = 256;
/** Latency-phase answers slower than this are listed with their time in the run (runs[].slow), to see when stalls happen. */
const SLOW_MS = 20;
const PATH = "/bench/item?x=1";

function nonOk(status, expect) {
  const ok = (code) => (expect === undefined ? code >= 200 && code < 300 : code === expect);
  return Object.entries(status).filter(([code]) => !ok(Number(code))).reduce((t, [, n]) => t + n, 0);
}

function summariseRuns(runs, expect) {
  return {
    requests_per_s: round(median(runs.map((r) => r.requests_per_s)), 1),
    p50_ms: round(median(runs.map((r) => r.latency.p50_ms))),
    p99_ms: round(median(runs.map((r) => r.latency.p99_ms))),
    responses: runs.reduce((s, r) => s + r.responses, 0),
    ...(expect === undefined ? {} : { expected_status: expect }),
    non_2xx: runs.reduce((s, r) => s + nonOk(r.status, expect), 0),
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
    ...(targets.g ? { g: { label: "g", url: targets.g.url, kind: "get", path: PATH, headers: targets.g.headers } } : {}),
    ...(targets.h ? { h: { label: "h", url: targets.h.url, kind: "get", path: PATH, headers: targets.h.headers } } : {}),
    // Refusals, by throughput (a steadier figure of their cost than CPU slices): each against the bare Worker answering by itself.
    ...(targets.refusals
      ? {
          l: { label: "l", url: targets.a.url, kind: "get", path: "/bench/local" },
          lf: { label: "lf", url: targets.a.url, kind: "flood", path: "/bench/local" },
          p: { label: "p", url: targets.a.url, kind: "get", path: "/bench/problem", expect: 429 },
          r: { label: "r", url: targets.b.url, kind: "get", path: PATH, headers: targets.refusals.exhaustedHeaders, expect: 429 },
          u: { label: "u", url: targets.b.url, kind: "flood", path: PATH, expect: 401 },
          q: { label: "q", url: targets.a.url, kind: "flood", path: "/bench/unauthorized", expect: 401 },
        }
      : {}),
  };
  const names = Object.keys(specs);

  for (const name of names) {
    log(`  warm-up ${name} (${settings.warmupS} s)`);
    await runLoad({ ...specs[name], connections: settings.connections, durationS: settings.warmupS, prefix: `warm-${name}` });
  }

  // 1. Throughput, closed loop.
  const tRuns = await interleave(specs, settings.rounds, { connections: settings.connections, durationS: settings.durationS }, log, "throughput");
  const throughput = Object.fromEntries(names.map((n) => [n, summariseRuns(tRuns[n], specs[n].expect)]));

  // 2. Latency at one fixed rate: at most latencyRatePerS, and at most a third
  // of the slowest target's measured capacity, so no target queues.
  const slowest = Math.min(...names.map((n) => throughput[n].requests_per_s));
  const rate = Math.max(10, Math.min(settings.latencyRatePerS, Math.floor(slowest / 3)));
  const latencySpecs = Object.fromEntries(["a", "b", "c"].map((n) => [n, specs[n]]));
  const lRuns = await interleave(latencySpecs, settings.latencyRounds, { ratePerS: rate, durationS: settings.latencyDurationS, warmupS: 0.5, keepSlowMs: SLOW_MS }, log, "latency");
  const latency = Object.fromEntries(Object.keys(latencySpecs).map((n) => [n, summariseRuns(lRuns[n])]));

  // Against the contract's control, round by round: what the gateway adds to the work its contract asks for.
  const ratios = ratiosAgainstA(tRuns, names, { throughput: (r) => r.requests_per_s, p50: (r) => r.latency.p50_ms, p99: (r) => r.latency.p99_ms });
  for (const [x, control] of [["b", "g"], ["e", "h"], ["d", "g"]]) {
    if (tRuns[x] && tRuns[control]) ratios[`${x}/${control}`] = { throughput: ratioSummary(tRuns[x].map((r, i) => r.requests_per_s / tRuns[control][i].requests_per_s)) };
  }
  // A request's own cost by throughput: 1/requests per second less its baseline's, in the same round (at saturation the workerd's thread is the bottleneck).
  const rpsOf = (name) => tRuns[name].map((r) => r.requests_per_s);
  const ownUs = (x, base) => ownUsPerRound(rpsOf(x), rpsOf(base));
  let refusals = null;
  if (specs.r) {
    const key = ownUs("b", "a");
    const per = (own) => own.map((v, i) => v / key[i]);
    refusals = {
      own_us: {
        key: ratioSummary(key),
        rate_limited: ratioSummary(ownUs("r", "l")),
        bare_problem: ratioSummary(ownUs("p", "l")),
        invalid_key: ratioSummary(ownUs("u", "lf")),
        bare_unauthorized: ratioSummary(ownUs("q", "lf")),
        contract: specs.g ? ratioSummary(ownUs("g", "a")) : null,
      },
      rate_limited_vs_key: ratioSummary(per(ownUs("r", "l"))),
      invalid_key_vs_key: ratioSummary(per(ownUs("u", "lf"))),
      // The 429 less the bare Worker's same answer: what the gateway's checks before the refusal cost, against an admitted request's own.
      rate_limited_checks_vs_key: ratioSummary(per(ownUs("r", "p"))),
      // The 401 less the bare Worker's same answer after the same HMAC check.
      invalid_key_rest_vs_key: ratioSummary(per(ownUs("u", "q"))),
    };
  }
  return {
    settings: { ...settings, latency_rate_per_s: rate, upload_body_bytes: UPLOAD_BODY_BYTES, upload_object_names: "unique per request (/objects/<phase>-r<round>-<n>)", order: names.join(", ") },
    throughput: {
      summary: throughput,
      ratios,
      runs: tRuns,
    },
    refusals,
    latency: {
      rate_per_s: rate,
      summary: latency,
      ratios: ratiosAgainstA(lRuns, Object.keys(latencySpecs), { p50: (r) => r.latency.p50_ms, p99: (r) => r.latency.p99_ms }),
      runs: lRuns,
    },
  };
}

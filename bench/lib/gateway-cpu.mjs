// The gateway's own CPU per request (issues 11, 13 and 15), measured as the
// workerd process's CPU time (bench/lib/cpu-time.mjs) over a load divided by
// the answers it gave, for each case, in interleaved rounds:
//
// - forwarded cases (a hot managed key, a hot JWT caller, an anonymous
//   caller, the SSE stream) minus the bare pass-through Worker's CPU per
//   request for the same origin answer in the same round;
// - refusals (a 429, a 401 for a made-up key) minus the bare Worker's CPU
//   for a request it answers itself with no fetch: a refusal does no fetch,
//   and the runtime's share of taking a request and writing an answer
//   (HTTP parsing, Miniflare's entry Worker, the response) is not the
//   gateway's;
// - the first request of a new JWT, per algorithm, minus the hot JWT's: the
//   signature check and what comes with a token never seen;
// - the SSE stream through a route with response_charge (json) against the
//   same route without it.
//
// Why CPU time: the machine's 2 cores are shared with other jobs and with the
// load generator, so requests per second move by tens of percent from round
// to round; the CPU a request needs moves far less, and it is what Workers
// bill. Each case is a closed loop (autocannon) on few connections, so the
// isolate is mostly handling one request at a time whatever the machine's
// load (on 8 connections per-request CPU falls as requests batch up, and how
// much they batch follows the load); each run is a fixed number of answers
// (so no request is cut off mid-way: a stream abandoned at the end of a timed
// run costs CPU and counts no answer), sized from the case's warm-up rate to
// last about durationS. The figure per round is CPU ns / answers, and every
// difference or ratio is taken within a round, then summarised as median
// (min–max) over rounds.
import { cpuBetween, processCpu } from "./cpu-time.mjs";
import { SSE_PLAIN_PATH, SSE_PRICED_PATH } from "./gateway-config.mjs";
import { JWT_ALGORITHMS } from "./jwt-tokens.mjs";
import { runLoad } from "./load.mjs";
import { median, round, spread } from "./stats.mjs";

export const CPU_SETTINGS = {
  full: { connections: 2, warmupS: 1, durationS: 2, rounds: 5, firstTokens: 300, minAnswers: 40, maxAnswers: 20_000 },
  quick: { connections: 2, warmupS: 0.5, durationS: 1, rounds: 2, firstTokens: 100, minAnswers: 20, maxAnswers: 10_000 },
};

const PATH = "/bench/item?x=1";
const ANONYMOUS_ADDRESS = "203.0.113.9";
/** Past this share of answers with another status than expected, a case's figure is flagged. */
const MAX_UNEXPECTED_SHARE = 0.01;

function summary(values, digits = 1) {
  const s = spread(values);
  return { median: round(median(values), digits), min: round(s?.min ?? null, digits), max: round(s?.max ?? null, digits), per_round: values.map((v) => round(v, digits)) };
}

function perRound(a, b, op) {
  return a.map((x, i) => op(x, b[i]));
}

/**
 * targets: {bare: worker, gateway: worker} (from startWorker, with .pid);
 * keys: {hot, exhausted} managed keys; jwt: benchJwt() of the gateway's
 * issuer; settings: CPU_SETTINGS.full or .quick.
 */
export async function runGatewayCpu({ bare, gateway, keys, jwt }, settings, log) {
  if (bare.pid === null || gateway.pid === null) throw new Error("the workerd process of a target was not found");
  const [hotJwt] = await jwt.sign("RS256", 1);
  const bearer = (token) => ({ authorization: `Bearer ${token}` });
  const get = (worker, path, headers = {}) => ({ pid: worker.pid, spec: { url: worker.url, kind: "get", path, headers } });
  const cases = {
    // Baselines (the bare Worker).
    bare_local: { label: "bare Worker, answered by itself (no fetch)", expect: 200, pid: bare.pid, spec: { url: bare.url, kind: "flood", path: "/bench/local" } },
    bare_forward: { label: "bare Worker, forwarded", expect: 200, ...get(bare, PATH) },
    bare_sse: { label: "bare Worker, 100 KB SSE forwarded", expect: 200, ...get(bare, "/sse/bare") },
    // The gateway.
    key: { label: "hot managed key", expect: 200, baseline: "bare_forward", ...get(gateway, PATH, bearer(keys.hot)) },
    jwt: { label: "hot JWT caller (RS256)", expect: 200, baseline: "bare_forward", ...get(gateway, PATH, bearer(hotJwt)) },
    anonymous: { label: "anonymous caller", expect: 200, baseline: "bare_forward", ...get(gateway, PATH, { "cf-connecting-ip": ANONYMOUS_ADDRESS }) },
    rate_limited: { label: "429 rate_limited (a key over its limit)", expect: 429, baseline: "bare_local", ...get(gateway, PATH, bearer(keys.exhausted)) },
    // A made-up key of the managed form from a fresh address each (the per-address auth-failure gate never trips), as in a flood.
    invalid_key: { label: "401 invalid_credential (a made-up key)", expect: 401, baseline: "bare_local", pid: gateway.pid, spec: { url: gateway.url, kind: "flood", path: PATH } },
    sse: { label: "100 KB SSE, route without response_charge", expect: 200, baseline: "bare_sse", ...get(gateway, SSE_PLAIN_PATH, bearer(keys.hot)) },
    sse_priced: { label: "100 KB SSE, route with response_charge json", expect: 200, baseline: "bare_sse", ...get(gateway, SSE_PRICED_PATH, bearer(keys.hot)) },
  };
  // First tokens: a batch of fresh tokens per algorithm and round, signed now (not timed).
  const fresh = {};
  for (const alg of JWT_ALGORITHMS) {
    fresh[alg] = [];
    for (let r = 0; r <= settings.rounds; r++) fresh[alg].push(await jwt.sign(alg, settings.firstTokens));
    cases[`jwt_first_${alg}`] = { label: `first request of a new JWT, ${alg}`, expect: 200, baseline: "jwt", pid: gateway.pid, tokens: fresh[alg], spec: { url: gateway.url, kind: "tokens", path: PATH } };
  }

  const names = Object.keys(cases);
  const specFor = (c, round) => (c.tokens ? { ...c.spec, tokens: c.tokens[round], amount: c.tokens[round].length } : { ...c.spec, amount: c.amount });
  for (const name of names) {
    const c = cases[name];
    // Round 0 of the token batches warms up the first-token path; a timed warm-up sizes the other runs.
    const warm = c.tokens ? specFor(c, 0) : { ...c.spec, durationS: settings.warmupS };
    const load = await runLoad({ ...warm, connections: settings.connections, label: `cpu warm-up ${name}` });
    if (!c.tokens) c.amount = Math.max(settings.minAnswers, Math.min(settings.maxAnswers, Math.round(load.requests_per_s * settings.durationS)));
  }
  const runs = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 1; r <= settings.rounds; r++) {
    for (const name of names) {
      const c = cases[name];
      const before = processCpu(c.pid);
      const load = await runLoad({ ...specFor(c, r), connections: settings.connections, maxS: 60, label: `cpu ${name}` });
      // Background work a request started (waitUntil) finishes within a few ms.
      await new Promise((resolve) => setTimeout(resolve, 50));
      const used = cpuBetween(before, processCpu(c.pid));
      const expected = load.status[c.expect] ?? 0;
      const run = { answers: load.responses, status: load.status, errors: load.errors + load.timeouts, cpu_ms: round(used.ns / 1e6, 1), cpu_source: used.source, us_per_request: used.ns / 1000 / load.responses, unexpected: load.responses - expected };
      runs[name].push(run);
      log(`  cpu round ${r} ${name}: ${run.us_per_request.toFixed(1)} µs/request (${run.answers} answers in ${load.elapsed_s} s, ${run.cpu_ms} ms CPU, ${JSON.stringify(load.status)})`);
    }
  }

  const raw = Object.fromEntries(names.map((n) => [n, runs[n].map((x) => x.us_per_request)]));
  const own = {};
  for (const name of names) {
    const base = cases[name].baseline;
    if (base !== undefined) own[name] = perRound(raw[name], raw[base], (x, y) => x - y);
  }
  const out = { settings, cases: {} };
  for (const name of names) {
    const c = cases[name];
    const unexpected = runs[name].reduce((s, x) => s + x.unexpected, 0);
    const answers = runs[name].reduce((s, x) => s + x.answers, 0);
    out.cases[name] = {
      label: c.label,
      expected_status: c.expect,
      baseline: c.baseline ?? null,
      workerd_us_per_request: summary(raw[name]),
      own_us_per_request: own[name] ? summary(own[name]) : null,
      answers,
      unexpected_status_share: round(unexpected / Math.max(1, answers), 4),
      flagged: unexpected / Math.max(1, answers) > MAX_UNEXPECTED_SHARE,
      runs: runs[name].map((x) => ({ ...x, us_per_request: round(x.us_per_request, 2) })),
    };
  }
  const ratio = (a, b) => summary(perRound(own[a], own[b], (x, y) => x / y), 3);
  out.checks = {
    rate_limited_vs_key: ratio("rate_limited", "key"),
    invalid_key_vs_key: ratio("invalid_key", "key"),
    jwt_vs_key: ratio("jwt", "key"),
    // Issue 15: the gateway's workerd CPU for the stream with cost extraction over without it.
    sse_priced_added_percent: summary(perRound(raw.sse_priced, raw.sse, (x, y) => 100 * (x / y - 1)), 1),
    sse_priced_added_us: summary(perRound(raw.sse_priced, raw.sse, (x, y) => x - y), 1),
    // The same difference over the gateway's own share of the plain stream (its workerd CPU less the bare Worker's).
    sse_priced_added_vs_own_percent: summary(perRound(own.sse_priced, own.sse, (x, y) => 100 * (x / y - 1)), 1),
  };
  out.jwt_first_us = Object.fromEntries(JWT_ALGORITHMS.map((alg) => [alg, out.cases[`jwt_first_${alg}`].own_us_per_request]));
  return out;
}

const fmt = (s, digits = 1) => (s === null ? "–" : `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`);

/** The targets this part measures, in the shape of report.mjs's evaluateTargets. */
export function cpuTargets(cpu) {
  const k = cpu.checks;
  const t = [];
  for (const [name, check] of [
    ["429", k.rate_limited_vs_key],
    ["401", k.invalid_key_vs_key],
  ]) {
    t.push({ target: `a ${name} costs ≤ ¼ of an admitted request's gateway CPU`, measured: `${fmt(check, 2)}× the hot key's`, met: check.median <= 0.25, note: check.median <= 0.25 ? "" : `gap ${round(check.median - 0.25, 2)}× of the key's own CPU` });
  }
  t.push({ target: "hot JWT ≤ 1.1× a hot key's gateway CPU", measured: `${fmt(k.jwt_vs_key, 2)}×`, met: k.jwt_vs_key.median <= 1.1, note: k.jwt_vs_key.median <= 1.1 ? "" : `gap ${round(k.jwt_vs_key.median - 1.1, 2)}×` });
  t.push({
    target: "100 KB SSE with response_charge json: ≤ 5 % more gateway CPU",
    measured: `+${fmt(k.sse_priced_added_percent)} % of the gateway's workerd CPU (+${fmt(k.sse_priced_added_us)} µs)`,
    met: k.sse_priced_added_percent.median <= 5,
    note: `+${fmt(k.sse_priced_added_vs_own_percent)} % of the gateway's own share (its CPU less the bare Worker's)`,
  });
  return t;
}

export function cpuSummary(cpu) {
  const out = [];
  const s = cpu.settings;
  out.push(`## Gateway CPU per request (workerd process CPU time / answers; ${s.rounds} interleaved rounds of ~${s.durationS} s per case, ${s.connections} connections; ${s.firstTokens} new tokens per algorithm and round)`);
  out.push("");
  out.push("| case | workerd µs per request | own µs per request (less its baseline) | baseline | answers |");
  out.push("| --- | ---: | ---: | --- | --- |");
  for (const c of Object.values(cpu.cases)) {
    out.push(`| ${c.label} | ${fmt(c.workerd_us_per_request)} | ${fmt(c.own_us_per_request)} | ${c.baseline === null ? "–" : cpu.cases[c.baseline].label} | ${c.answers}${c.flagged ? ` **${(c.unexpected_status_share * 100).toFixed(1)} % not ${c.expected_status}**` : ""} |`);
  }
  out.push("");
  return out.join("\n");
}

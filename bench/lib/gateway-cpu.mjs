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
// to round; the CPU a request needs moves less, and it is what Workers bill.
// It still moves with the machine's load (other processes evict caches and
// wake the runtime's threads at other moments; this VM has no hardware
// counters for instructions), so every case is measured against its
// baseline in the same seconds: a round passes over every case several
// times, each time a slice of a few hundred requests (sized from the case's
// warm-up rate to take about sliceS) from one persistent load thread with
// keep-alive connections (cpu-load-thread.mjs), on few connections, so the
// isolate mostly handles one request at a time (on 8 connections requests
// batch up, and how much follows the load). Each slice is a fixed number of
// answers, so no request is cut off mid-way. The figure per round is CPU ns
// / answers over its slices; every difference or ratio is taken within a
// round, then summarised as median (min–max) over rounds.
import { Worker } from "node:worker_threads";
import { onCleanup } from "./cleanup.mjs";
import { cpuBetween, processCpu } from "./cpu-time.mjs";
import { SSE_PLAIN_PATH, SSE_PRICED_PATH } from "./gateway-config.mjs";
import { JWT_ALGORITHMS } from "./jwt-tokens.mjs";
import { median, round, spread } from "./stats.mjs";

export const CPU_SETTINGS = {
  full: { connections: 2, warmupAnswers: 300, rounds: 4, slices: 5, sliceS: 0.15, minSlice: 4, maxSlice: 2000, firstTokens: 200 },
  quick: { connections: 2, warmupAnswers: 100, rounds: 2, slices: 4, sliceS: 0.1, minSlice: 2, maxSlice: 1000, firstTokens: 80 },
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
export async function runGatewayCpu({ bare, contract, gateway, keys, jwt }, settings, log) {
  if (bare.pid === null || gateway.pid === null) throw new Error("the workerd process of a target was not found");
  const [hotJwt] = await jwt.sign("RS256", 1);
  const bearer = (token) => ({ authorization: `Bearer ${token}` });
  const get = (worker, path, headers = {}) => ({ pid: worker.pid, spec: { url: worker.url, kind: "get", path, headers } });
  const cases = {
    // Baselines (the bare Worker): each is measured in the slice just before each case that names it.
    bare_local: { label: "bare Worker, answered by itself (no fetch)", expect: 200, pid: bare.pid, spec: { url: bare.url, kind: "flood", path: "/bench/local" } },
    bare_forward: { label: "bare Worker, forwarded", expect: 200, ...get(bare, PATH) },
    bare_sse: { label: "bare Worker, 100 KB SSE forwarded", expect: 200, ...get(bare, "/sse/bare") },
    // The gateway.
    key: { label: "hot managed key", expect: 200, baseline: "bare_forward", ...get(gateway, PATH, bearer(keys.hot)) },
    jwt: { label: "hot JWT caller (RS256)", expect: 200, baseline: "bare_forward", ...get(gateway, PATH, bearer(hotJwt)) },
    anonymous: { label: "anonymous caller", expect: 200, baseline: "bare_forward", ...get(gateway, PATH, { "cf-connecting-ip": ANONYMOUS_ADDRESS }) },
    // A control: the bare Worker doing only what the contract asks of an admitted request (bench/bare-worker.js, CONTRACT=log); key less it is what the checks cost.
    ...(contract ? { contract: { label: "bare Worker doing only the contract's work for (b) (control)", expect: 200, baseline: "bare_forward", ...get(contract, PATH, bearer(keys.hot)) } } : {}),
    rate_limited: { label: "429 rate_limited (a key over its limit)", expect: 429, baseline: "bare_local", ...get(gateway, PATH, bearer(keys.exhausted)) },
    // The bare Worker answering the same 429 (headers and body) with no check before it: what the answer itself costs the runtime.
    bare_problem: { label: "bare Worker answering a 429 of the same shape (no checks)", expect: 429, baseline: "bare_local", ...get(bare, "/bench/problem") },
    // A made-up key of the managed form from a fresh address each (the per-address auth-failure gate never trips), as in a flood.
    invalid_key: { label: "401 invalid_credential (a made-up key)", expect: 401, baseline: "bare_local", pid: gateway.pid, spec: { url: gateway.url, kind: "flood", path: PATH } },
    sse: { label: "100 KB SSE, route without response_charge", expect: 200, baseline: "bare_sse", ...get(gateway, SSE_PLAIN_PATH, bearer(keys.hot)) },
    // Against the same stream on the route without response_charge: own = the CPU cost extraction adds.
    sse_priced: { label: "100 KB SSE, route with response_charge json", expect: 200, baseline: "sse", ...get(gateway, SSE_PRICED_PATH, bearer(keys.hot)) },
  };
  // First tokens: a batch of fresh tokens per algorithm and round, signed now (not timed); against the hot JWT.
  for (const alg of JWT_ALGORITHMS) {
    const tokens = [];
    for (let r = 0; r <= settings.rounds; r++) tokens.push(await jwt.sign(alg, settings.firstTokens));
    cases[`jwt_first_${alg}`] = { label: `first request of a new JWT, ${alg}`, expect: 200, baseline: "jwt", pid: gateway.pid, tokens, spec: { url: gateway.url, kind: "tokens", path: PATH } };
  }

  const runs = await measureCases(cases, settings, log);
  const names = Object.keys(cases);
  const raw = Object.fromEntries(names.map((n) => [n, runs[n].map((x) => x.us_per_request)]));
  const own = {};
  // The same ratio from each round's median slice (a slice's own CPU: its µs per answer less its baseline's in the slice before it):
  // a slice that met a GC, a cache refresh or a background flush moves the median less than the round's sum.
  const sliceMedian = (name) => runs[name].map((x) => median(x.slice_own_us ?? []));
  const ownShare = {};
  for (const name of names) {
    if (cases[name].baseline === undefined) continue;
    own[name] = runs[name].map((x) => x.us_per_request - x.base_us_per_request);
    ownShare[name] = runs[name].map((x) => 100 * (x.us_per_request / x.base_us_per_request - 1));
  }
  const out = { settings, cases: {} };
  for (const name of names) {
    const c = cases[name];
    const answers = runs[name].reduce((s, x) => s + x.answers, 0);
    const unexpected = runs[name].reduce((s, x) => s + x.unexpected, 0);
    out.cases[name] = {
      label: c.label,
      expected_status: c.expect,
      baseline: c.baseline ?? null,
      workerd_us_per_request: summary(raw[name]),
      own_us_per_request: own[name] ? summary(own[name]) : null,
      own_us_slice_median: own[name] ? summary(sliceMedian(name)) : null,
      answers,
      unexpected_status_share: round(unexpected / Math.max(1, answers), 4),
      flagged: unexpected / Math.max(1, answers) > MAX_UNEXPECTED_SHARE,
      runs: runs[name].map((x) => ({ ...x, us_per_request: round(x.us_per_request, 2), base_us_per_request: round(x.base_us_per_request ?? null, 2) })),
    };
  }
  const ratio = (a, b) => summary(perRound(own[a], own[b], (x, y) => x / y), 3);
  const sliceRatio = (a, b) => summary(perRound(sliceMedian(a), sliceMedian(b), (x, y) => x / y), 3);
  out.checks = {
    rate_limited_vs_key: ratio("rate_limited", "key"),
    // How much of the 429's own CPU its answer alone costs in a bare Worker.
    bare_problem_vs_rate_limited: ratio("bare_problem", "rate_limited"),
    invalid_key_vs_key: ratio("invalid_key", "key"),
    rate_limited_vs_key_slice_median: sliceRatio("rate_limited", "key"),
    invalid_key_vs_key_slice_median: sliceRatio("invalid_key", "key"),
    bare_problem_vs_rate_limited_slice_median: sliceRatio("bare_problem", "rate_limited"),
    jwt_vs_key_slice_median: sliceRatio("jwt", "key"),
    ...(cases.contract ? { contract_vs_key: ratio("contract", "key"), contract_vs_key_slice_median: sliceRatio("contract", "key") } : {}),
    jwt_vs_key: ratio("jwt", "key"),
    // Issue 15: the gateway's workerd CPU for the stream with cost extraction over without it (adjacent slices).
    sse_priced_added_percent: summary(ownShare.sse_priced, 1),
    sse_priced_added_us: summary(own.sse_priced, 1),
    // The same difference over the gateway's own share of the plain stream (its workerd CPU less the bare Worker's).
    sse_priced_added_vs_own_percent: summary(perRound(own.sse_priced, own.sse, (x, y) => (100 * x) / y), 1),
  };
  out.jwt_first_us = Object.fromEntries(JWT_ALGORITHMS.map((alg) => [alg, out.cases[`jwt_first_${alg}`].own_us_per_request]));
  return out;
}

/** The persistent load thread (cpu-load-thread.mjs): run(spec) → {answers, status, errors}. */
function startLoadThread() {
  const worker = new Worker(new URL("./cpu-load-thread.mjs", import.meta.url));
  const pending = new Map();
  let nextId = 1;
  worker.on("message", (msg) => {
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error) p?.reject(new Error(msg.error));
    else p?.resolve(msg);
  });
  worker.on("error", (err) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  });
  const unregister = onCleanup(() => worker.terminate());
  return {
    run: (spec) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`load slice did not finish in ${SLICE_TIMEOUT_S} s`));
        }, SLICE_TIMEOUT_S * 1000);
        pending.set(id, { resolve: (v) => (clearTimeout(timer), resolve(v)), reject: (e) => (clearTimeout(timer), reject(e)) });
        worker.postMessage({ ...spec, id });
      }),
    close: async () => {
      unregister();
      worker.postMessage("close");
      await new Promise((resolve) => setTimeout(resolve, 50));
      await worker.terminate();
    },
  };
}

const SLICE_TIMEOUT_S = 60;

/**
 * Warms every case up, then runs `settings.rounds` rounds; each round is
 * `settings.slices` passes over the cases, each a slice of the case's
 * requests (sized from its warm-up rate to take about sliceS) right after a
 * slice of its baseline, so a case and its baseline share the machine's
 * load second by second. Returns per case one entry per round, its slices
 * summed: {answers, status, cpu_ms, us_per_request, base_us_per_request (its
 * baseline's, from the slices beside it), unexpected, …}; a pure baseline's
 * entry sums all its slices. A case: {pid, spec ({url, path, headers?,
 * kind: "get" | "flood" | "tokens"}), expect (its status), baseline? (a
 * case name), tokens? (one list per round, round 0 for the warm-up: each
 * token is sent once)}.
 */
export async function measureCases(cases, settings, log) {
  const names = Object.keys(cases);
  const baselines = new Set(names.map((n) => cases[n].baseline).filter((b) => b !== undefined));
  // Every case but a pure baseline is measured; a case with a baseline right after a slice of it.
  const measured = names.filter((n) => !baselines.has(n) || cases[n].baseline !== undefined);
  const load = startLoadThread();
  const conn = settings.connections;
  const empty = () => ({ ns: 0, answers: 0, status: {}, errors: 0, source: "schedstat" });
  const add = (sum, used, out) => {
    sum.ns += used.ns;
    sum.answers += out.answers;
    sum.errors += out.errors;
    if (used.source !== "schedstat") sum.source = used.source;
    for (const [code, n] of Object.entries(out.status)) sum.status[code] = (sum.status[code] ?? 0) + n;
  };
  const slice = async (c, tokens) => {
    const before = processCpu(c.pid);
    const out = await load.run({ ...c.spec, tokens, amount: tokens ? tokens.length : c.slice, connections: conn });
    // Background work a request started (waitUntil) ends within a few ms of its answer.
    await new Promise((resolve) => setTimeout(resolve, 10));
    return { used: cpuBetween(before, processCpu(c.pid)), out };
  };
  try {
    for (const name of names) {
      const c = cases[name];
      const t0 = performance.now();
      const warm = await load.run({ ...c.spec, tokens: c.tokens?.[0], amount: c.tokens ? c.tokens[0].length : settings.warmupAnswers, connections: conn });
      const perS = warm.answers / ((performance.now() - t0) / 1000);
      c.slice = Math.max(settings.minSlice, Math.min(settings.maxSlice, Math.round(perS * settings.sliceS)));
    }
    const runs = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 1; r <= settings.rounds; r++) {
      const sums = Object.fromEntries(names.map((n) => [n, empty()]));
      const baseSums = Object.fromEntries(measured.map((n) => [n, empty()]));
      // Per slice: the case's µs per answer less its baseline's in the slice just before it.
      const sliceOwn = Object.fromEntries(measured.map((n) => [n, []]));
      for (let k = 0; k < settings.slices; k++) {
        for (const name of measured) {
          const c = cases[name];
          if (c.baseline !== undefined) {
            const b = cases[c.baseline];
            const { used, out } = await slice(b, undefined);
            add(baseSums[name], used, out);
            baseSums[name].last = out.answers > 0 ? used.ns / 1000 / out.answers : undefined;
            add(sums[c.baseline], used, out);
          }
          // Token cases send each of the round's tokens once, a slice at a time.
          const tokens = c.tokens ? c.tokens[r].slice(Math.floor((k * c.tokens[r].length) / settings.slices), Math.floor(((k + 1) * c.tokens[r].length) / settings.slices)) : undefined;
          const { used, out } = await slice(c, tokens);
          add(sums[name], used, out);
          if (c.baseline !== undefined) {
            const b = baseSums[name].last;
            if (b !== undefined && out.answers > 0) sliceOwn[name].push(used.ns / 1000 / out.answers - b);
          }
        }
      }
      for (const name of names) {
        const sum = sums[name];
        const base = baseSums[name];
        const expected = sum.status[cases[name].expect] ?? 0;
        const run = {
          answers: sum.answers,
          status: sum.status,
          errors: sum.errors,
          cpu_ms: round(sum.ns / 1e6, 1),
          cpu_source: sum.source,
          us_per_request: sum.ns / 1000 / sum.answers,
          ...(base !== undefined && base.answers > 0 ? { base_us_per_request: base.ns / 1000 / base.answers } : {}),
          unexpected: sum.answers - expected,
          ...(sliceOwn[name]?.length ? { slice_own_us: sliceOwn[name].map((v) => round(v, 1)) } : {}),
        };
        runs[name].push(run);
        log(`  cpu round ${r} ${name}: ${run.us_per_request.toFixed(1)} µs/request${run.base_us_per_request === undefined ? "" : ` (its baseline beside it: ${run.base_us_per_request.toFixed(1)})`}, ${run.answers} answers, ${run.cpu_ms} ms CPU, ${JSON.stringify(sum.status)}`);
      }
    }
    return runs;
  } finally {
    await load.close();
  }
}

const fmt = (s, digits = 1) => (s === null ? "–" : `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`);

/** The targets this part measures, in the shape of report.mjs's evaluateTargets. */
export function cpuTargets(cpu) {
  const k = cpu.checks;
  const t = [];
  for (const [name, check, bySlice] of [
    ["429", k.rate_limited_vs_key, k.rate_limited_vs_key_slice_median],
    ["401", k.invalid_key_vs_key, k.invalid_key_vs_key_slice_median],
  ]) {
    const answerShare = name === "429" && k.bare_problem_vs_rate_limited ? `; the same answer from a bare Worker with no checks costs ${fmt(k.bare_problem_vs_rate_limited, 2)}× the 429's own CPU (${fmt(k.bare_problem_vs_rate_limited_slice_median, 2)}× by median slices)` : "";
    const slices = bySlice ? `; by each round's median slice ${fmt(bySlice, 2)}×` : "";
    t.push({ target: `a ${name} costs ≤ ¼ of an admitted request's gateway CPU`, measured: `${fmt(check, 2)}× the hot key's${slices}`, met: check.median <= 0.25, note: (check.median <= 0.25 ? "" : `gap ${round(check.median - 0.25, 2)}× of the key's own CPU`) + answerShare });
  }
  if (k.contract_vs_key) {
    t.push({
      target: "(control) the contract's work alone against a hot key's gateway CPU",
      measured: `${fmt(k.contract_vs_key, 2)}× (${fmt(k.contract_vs_key_slice_median, 2)}× by median slices)`,
      met: "diagnostic",
      note: "a bare Worker forwarding with the headers, RateLimit headers, waitUntil and log line the contract asks of an admitted request, nothing else",
    });
  }
  t.push({ target: "hot JWT ≤ 1.1× a hot key's gateway CPU", measured: `${fmt(k.jwt_vs_key, 2)}×`, met: k.jwt_vs_key.median <= 1.1, note: k.jwt_vs_key.median <= 1.1 ? "" : `gap ${round(k.jwt_vs_key.median - 1.1, 2)}×` });
  t.push({
    target: "100 KB SSE with response_charge json: ≤ 10 % more gateway CPU",
    measured: `+${fmt(k.sse_priced_added_percent)} % of the gateway's workerd CPU (+${fmt(k.sse_priced_added_us)} µs)`,
    met: k.sse_priced_added_percent.median <= 10,
    note: `+${fmt(k.sse_priced_added_vs_own_percent)} % of the gateway's own share (its CPU less the bare Worker's)`,
  });
  return t;
}

export function cpuSummary(cpu) {
  const out = [];
  const s = cpu.settings;
  out.push(`## Gateway CPU per request (workerd process CPU time / answers; ${s.rounds} rounds, each ${s.slices} passes over every case in slices of ~${s.sliceS} s, ${s.connections} connections; ${s.firstTokens} new tokens per algorithm and round)`);
  out.push("");
  out.push("| case | workerd µs per request | own µs per request (less its baseline, measured beside it) | own µs, each round's median slice | baseline | answers |");
  out.push("| --- | ---: | ---: | ---: | --- | --- |");
  for (const c of Object.values(cpu.cases)) {
    out.push(`| ${c.label} | ${fmt(c.workerd_us_per_request)} | ${fmt(c.own_us_per_request)} | ${fmt(c.own_us_slice_median)} | ${c.baseline === null ? "–" : cpu.cases[c.baseline].label} | ${c.answers}${c.flagged ? ` **${(c.unexpected_status_share * 100).toFixed(1)} % not ${c.expected_status}**` : ""} |`);
  }
  out.push("");
  return out.join("\n");
}

// bench/run.mjs's figures from its rounds, its targets' verdicts, and the
// Markdown it prints. Every figure is the median over rounds of a per-round
// value (a difference or a ratio taken within the round), with a bootstrap
// 95 % interval (stats.mjs).
import { CPU_COMPARISONS, LOAD_COMPARISONS, P99_TARGET, PRICE_READ_ON, THROUGHPUT_TARGETS, usdPerMillion, verdict } from "./cost-cases.mjs";
import { medianWithInterval, round } from "./stats.mjs";

const summary = (values, digits) => {
  const s = medianWithInterval(values);
  return { median: round(s.median, digits), low: round(s.low, digits), high: round(s.high, digits), rounds: s.n };
};
const perRound = (b, a, op) => b.map((x, i) => op(x, a[i]));

/** Per case and per comparison, from {case: [µs per answer, one per round]}. */
export function cpuFigures(us, comparisons, sseBytes) {
  const kib = sseBytes / 1024;
  const cases = Object.fromEntries(Object.entries(us).map(([n, v]) => [n, summary(v, 1)]));
  const pairs = {};
  for (const c of comparisons) {
    if (!us[c.b]?.length || !us[c.a]?.length) continue;
    const added = summary(perRound(us[c.b], us[c.a], (x, y) => x - y), 1);
    pairs[`${c.b}_over_${c.a}`] = {
      b: c.b,
      a: c.a,
      added_us: added,
      ratio: summary(perRound(us[c.b], us[c.a], (x, y) => x / y), 3),
      added_usd_per_million: round(usdPerMillion(added.median), 5),
      ...(c.perKiB ? { added_us_per_kib: { median: round(added.median / kib, 2), low: round(added.low / kib, 2), high: round(added.high / kib, 2) }, kib: round(kib, 1) } : {}),
      ...(c.target !== undefined ? { target: c.target } : {}),
    };
  }
  return { per_case_us: cases, comparisons: pairs };
}

/** Per case and per comparison of the throughput or latency part, from {case: [{requests_per_s, p50_ms, p99_ms, isolate_busy, isolate_waiting, load_process_busy, errors}, one per round]}. */
export function loadFigures(rounds, mode) {
  const pick = (name, k) => rounds[name].map((x) => x[k]);
  const keys = mode === "throughput" ? ["requests_per_s", "isolate_busy", "isolate_waiting", "load_process_busy"] : ["p50_ms", "p99_ms", "requests_per_s", "isolate_busy", "isolate_waiting"];
  const per_case = Object.fromEntries(Object.keys(rounds).map((n) => [n, { ...Object.fromEntries(keys.map((k) => [k, summary(pick(n, k), 3)])), errors: pick(n, "errors").reduce((x, y) => x + y, 0) }]));
  const comparisons = {};
  for (const [b, a] of LOAD_COMPARISONS[mode]) {
    comparisons[`${b}_over_${a}`] =
      mode === "throughput"
        ? { ratio: summary(perRound(pick(b, "requests_per_s"), pick(a, "requests_per_s"), (x, y) => x / y), 3), added_us_per_request: summary(perRound(pick(b, "requests_per_s"), pick(a, "requests_per_s"), (x, y) => 1e6 / x - 1e6 / y), 1) }
        : {
            added_p50_ms: summary(perRound(pick(b, "p50_ms"), pick(a, "p50_ms"), (x, y) => x - y), 3),
            added_p99_ms: summary(perRound(pick(b, "p99_ms"), pick(a, "p99_ms"), (x, y) => x - y), 3),
            p99_ratio: summary(perRound(pick(b, "p99_ms"), pick(a, "p99_ms"), (x, y) => x / y), 3),
          };
  }
  return { per_case, comparisons };
}

/** Fewer rounds than this give no verdict: their interval is too wide to mean anything. */
const MIN_ROUNDS_FOR_VERDICT = 5;

/**
 * Each target measured in this run, with its verdict and, when not met, the
 * gap. No verdict from too few rounds, from a throughput workerd's thread
 * did not set (busy under 90 %), or from a latency run while that thread
 * waited for a CPU more than a tenth of the time; a CPU verdict from a
 * machine that was not idle says so.
 */
export function targets(result) {
  const out = [];
  const add = (target, ratio, bound, notMeasured = null) => {
    const limit = bound.atMost ?? bound.atLeast;
    const reason = result.settings.rounds < MIN_ROUNDS_FOR_VERDICT ? `no verdict: ${result.settings.rounds} rounds` : notMeasured;
    const v = reason ?? verdict(ratio, bound);
    const gap = v === "met" || reason !== null ? null : round(bound.atMost !== undefined ? ratio.median - limit : limit - ratio.median, 3);
    out.push({ target, median: ratio.median, low: ratio.low, high: ratio.high, verdict: v, gap, ...(result.idle ? {} : { machine_not_idle: true }) });
  };
  const busy = (part, names) => Math.min(...names.map((n) => part.per_case[n]?.isolate_busy.median ?? 0));
  const waiting = (part, names) => Math.max(...names.map((n) => part.per_case[n]?.isolate_waiting.median ?? 1));
  const pairs = result.cpu?.figures?.comparisons ?? {};
  for (const c of CPU_COMPARISONS.filter((x) => x.target !== undefined)) {
    const p = pairs[`${c.b}_over_${c.a}`];
    if (p) add(`CPU: ${c.b} ≤ ${c.target}× ${c.a}`, p.ratio, { atMost: c.target });
  }
  for (const target of THROUGHPUT_TARGETS) {
    const t = result.throughput?.comparisons?.[`${target.b}_over_${target.a}`];
    if (!t) continue;
    const b = busy(result.throughput, [target.b, target.a]);
    add(`throughput: ${target.b} ≥ ${target.atLeast}× ${target.a}`, t.ratio, { atLeast: target.atLeast }, b < 0.9 ? `not measured: workerd's thread busy ${round(b, 2)} of the time` : null);
  }
  const l = result.latency?.comparisons?.[`${P99_TARGET.b}_over_${P99_TARGET.a}`];
  if (l) {
    const w = waiting(result.latency, [P99_TARGET.b, P99_TARGET.a]);
    add(`p99 at ${result.latency.rate_per_s}/s: ${P99_TARGET.b} ≤ ${P99_TARGET.atMost}× ${P99_TARGET.a}`, l.p99_ratio, { atMost: P99_TARGET.atMost }, w > 0.1 ? `not measured: workerd's thread waited for a CPU ${round(w, 2)} of the time` : null);
  }
  return out;
}

const ci = (s, d = 1) => (s.median === null ? "–" : `${s.median.toFixed(d)} [${s.low.toFixed(d)}, ${s.high.toFixed(d)}]`);

/** The printed summary: the tables docs/performance.md takes its figures from. */
export function markdown(result) {
  const lines = [];
  const m = result.machine;
  if (!result.idle) lines.push("**The machine was not idle** (a 1-minute load average of 0.5 or more before the run, or workerd's isolate thread waiting for a CPU more than a tenth of the time it ran): read these figures as samples, not verdicts.", "");
  lines.push(`Gateway ${result.gateway_commit ?? m.git_commit}${result.gateway_source === "working tree" && m.src_uncommitted_changes ? " + uncommitted src" : ""}, ${m.date.slice(0, 16)} UTC, ${m.cpu_model} × ${m.cpu_count}; load average ${result.load_average_before.map((x) => x.toFixed(2)).join(" ")} before, ${result.load_average_after.map((x) => x.toFixed(2)).join(" ")} after; ${result.placement.note}. Median over ${result.settings.rounds} rounds [bootstrap 95 % interval].`);
  for (const part of ["cpu", "throughput", "latency", "profiles"]) if (result[part]?.error) lines.push("", `**The ${part} part failed**: ${result[part].error}`);
  if (result.cpu && !result.cpu.error) {
    const c = result.cpu;
    lines.push("", `CPU of workerd's isolate thread per answer (µs), ${c.settings.slice.small} requests a slice (${c.settings.slice.sse} for SSE), ${c.settings.connections} connection:`, "", "| case | µs per answer | answers | not as expected |", "| --- | ---: | ---: | ---: |");
    for (const [n, x] of Object.entries(c.cases)) lines.push(`| ${x.label} (\`${n}\`) | ${ci(c.figures.per_case_us[n])} | ${x.answers} | ${x.unexpected} |`);
    lines.push("", "| gateway over control | added µs | ratio | added USD per million requests | per KiB |", "| --- | ---: | ---: | ---: | ---: |");
    for (const [n, p] of Object.entries(c.figures.comparisons)) lines.push(`| ${n} | ${ci(p.added_us)} | ${ci(p.ratio, 3)} | ${p.added_usd_per_million.toFixed(5)} | ${p.added_us_per_kib ? `${p.added_us_per_kib.median} µs` : ""} |`);
    lines.push("", `workerd's threads over the part (CPU ms; only the isolate's is counted): ${JSON.stringify(c.thread_cpu_ms)}; ticks / schedstat of the isolate thread: ${c.ticks_over_schedstat}; time it waited for a CPU / time on one: ${c.isolate_waited_share}. Prices read ${PRICE_READ_ON}.`);
  }
  if (result.throughput && !result.throughput.error) {
    const t = result.throughput;
    lines.push("", "Closed-loop throughput (the isolate thread's share of the wall clock on a CPU, and waiting for one):", "", "| case | requests/s | isolate thread busy | isolate thread waiting | load process busy |", "| --- | ---: | ---: | ---: | ---: |");
    for (const [n, x] of Object.entries(t.per_case)) lines.push(`| ${n}${x.errors ? ` (${x.errors} failed requests)` : ""} | ${ci(x.requests_per_s, 0)} | ${ci(x.isolate_busy, 2)} | ${ci(x.isolate_waiting, 2)} | ${ci(x.load_process_busy, 2)} |`);
    const notBound = Object.entries(t.per_case).filter(([, x]) => x.isolate_busy.median < 0.9);
    if (notBound.length > 0) lines.push(`- **Not workerd's throughput**: its isolate thread was busy less than 90 % of the time for ${notBound.map(([n]) => n).join(", ")} (waiting for a CPU another process held, or short of load).`);
    for (const [n, x] of Object.entries(t.comparisons)) lines.push(`- ${n}: ${ci(x.ratio, 3)}× (${ci(x.added_us_per_request)} µs a request)`);
  }
  if (result.latency && !result.latency.error) {
    const l = result.latency;
    lines.push("", `Open loop at ${l.rate_per_s} requests/s:`, "", "| case | p50 ms | p99 ms | isolate thread busy |", "| --- | ---: | ---: | ---: |");
    for (const [n, x] of Object.entries(l.per_case)) lines.push(`| ${n}${x.errors ? ` (${x.errors} failed requests)` : ""} | ${ci(x.p50_ms, 3)} | ${ci(x.p99_ms, 3)} | ${ci(x.isolate_busy, 2)} |`);
    for (const [n, x] of Object.entries(l.comparisons)) lines.push(`- ${n}: p50 +${ci(x.added_p50_ms, 3)} ms, p99 +${ci(x.added_p99_ms, 3)} ms, p99 ${ci(x.p99_ratio, 3)}×`);
  }
  if (result.targets.length > 0) {
    lines.push("", "| target | measured | verdict |", "| --- | ---: | --- |");
    for (const t of result.targets) lines.push(`| ${t.target} | ${t.median} [${t.low}, ${t.high}] | ${t.verdict}${t.gap === null ? "" : ` (gap ${t.gap})`}${t.machine_not_idle ? "; machine not idle" : ""} |`);
  }
  if (result.profiles && !result.profiles.error) {
    for (const [label, byCase] of Object.entries(result.profiles)) {
      lines.push("", `Profile, ${label.replaceAll("_", " ")} (self time, share of busy samples):`);
      for (const [n, p] of Object.entries(byCase)) lines.push(`- ${n}: ${p.top_self.slice(0, 6).map((t) => `${t.function} ${(t.share * 100).toFixed(1)} %`).join("; ")}`);
    }
  }
  return lines.join("\n");
}

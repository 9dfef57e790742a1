// Targets (measured, never asserted) and the Markdown summary.
import { round } from "./stats.mjs";

const NAMES = {
  a: "(a) bare pass-through Worker",
  b: "(b) Tollgate, cached key, limits never refuse",
  c: "(c) Tollgate, PUT upload with quota (unique names)",
  d: "(d) Tollgate, mode \"off\" (diagnostic)",
  e: "(e) (b) with request_log off (diagnostic)",
  f: "(f) (d) with request_log off (diagnostic)",
  g: "(g) control: bare Worker doing only what the contract asks of (b)",
  h: "(h) control: (g) without the request-log line",
  l: "(l) bare Worker answering by itself (no fetch)",
  lf: "(lf) (l) with the flood's random keys and addresses",
  p: "(p) bare Worker answering a 429 of the gateway's shape (no checks)",
  r: "(r) Tollgate's 429 (a key over its limit)",
  u: "(u) Tollgate's 401 (made-up keys from fresh addresses)",
  q: "(q) bare Worker answering (u)'s 401 after the same HMAC check of the key",
};

function fmtRange(r, digits = 2) {
  if (!r) return "n/a";
  return `${r.median.toFixed(digits)} (${r.min.toFixed(digits)}–${r.max.toFixed(digits)})`;
}

/**
 * Only the TTL refreshes a cached key needs: the key's record, and the policy
 * snapshot (overrides and blocks, read in one batch), once per cache_ttl_s each.
 */
/** The background writes of what an isolate counts in memory (metering, key usage, traffic), once per usage.flush_interval_s. */
const INTERVAL_FLUSH = /^(insert usage_monthly|update api_keys|insert traffic)/;
/** usage.flush_interval_s as the bench's gateways run it (the default). */
const USAGE_FLUSH_INTERVAL_S = 60;
const REFRESH_STATEMENTS = new Set(["select api_keys", "select caller_overrides", "select caller_overrides (in batch)", "select blocks (in batch)"]);

export function evaluateTargets(r) {
  const t = [];
  const push = (target, measured, met, note = "") => t.push({ target, measured, met, note });
  const e2e = r.end_to_end;
  if (e2e) {
    const thr = e2e.throughput.ratios["b/a"].throughput;
    const p99 = e2e.latency.ratios["b/a"].p99;
    const p99Sat = e2e.throughput.ratios["b/a"].p99;
    const contract = e2e.throughput.ratios["g/a"]?.throughput;
    const overContract = e2e.throughput.ratios["b/g"]?.throughput;
    const contractNote = contract ? `; (g), a bare Worker doing only what the contract asks of (b), ${fmtRange(contract)} of (a); (b) ${fmtRange(overContract)} of (g)` : "";
    push("b/a throughput ≥ 0.90", `${fmtRange(thr)} (closed loop, ${e2e.settings.connections} connections)`, thr.median >= 0.9, (thr.median >= 0.9 ? "" : `gap ${round(0.9 - thr.median, 2)}: (b) serves ${Math.round((1 - thr.median) * 100)} % fewer requests/s than (a)`) + contractNote);
    push(
      "b/a p99 latency ≤ 1.15",
      `${fmtRange(p99)} at a fixed ${e2e.latency.rate_per_s} req/s; ${fmtRange(p99Sat)} at saturation`,
      p99.median <= 1.15,
      p99.median <= 1.15 ? "judged at the fixed rate (the same load for both)" : `gap ${round(p99.median - 1.15, 2)} at the fixed rate`,
    );
    const off = e2e.throughput.ratios["d/a"]?.throughput;
    if (off) {
      const bare = e2e.throughput.ratios["f/a"]?.throughput;
      push(
        'mode "off" (d) throughput ≥ 0.95 of (a)',
        `${fmtRange(off)}`,
        off.median >= 0.95,
        (off.median >= 0.95 ? "" : `gap ${round(0.95 - off.median, 2)}`) + (bare ? `; (f), the same without its request-log line: ${fmtRange(bare)}` : "") + (contract ? `; (d) ${fmtRange(e2e.throughput.ratios["d/g"]?.throughput)} of (g), the contract's work alone` : ""),
      );
    }
  }
  const ref = e2e?.refusals;
  if (ref) {
    const o = ref.own_us;
    const us = (x) => `${x.median.toFixed(0)} µs`;
    push(
      "a 429 costs ≤ ¼ of an admitted request's own cost (by throughput)",
      `${fmtRange(ref.rate_limited_vs_key)}× ((r) ${us(o.rate_limited)} over (l), against (b) ${us(o.key)} over (a))`,
      ref.rate_limited_vs_key.median <= 0.25,
      `the bare Worker's same 429 (p) costs ${us(o.bare_problem)} over (l); the 429 less it, the gateway's checks before it: ${fmtRange(ref.rate_limited_checks_vs_key)}× of (b)'s own${o.contract ? `; (b)'s own less the contract's work (g, ${us(o.contract)}): ${(o.key.median - o.contract.median).toFixed(0)} µs` : ""}`,
    );
    push(
      "a 401 costs ≤ ¼ of an admitted request's own cost (by throughput)",
      `${fmtRange(ref.invalid_key_vs_key)}× ((u) ${us(o.invalid_key)} over (lf))`,
      ref.invalid_key_vs_key.median <= 0.25,
      (ref.invalid_key_vs_key.median <= 0.25 ? "" : `gap ${round(ref.invalid_key_vs_key.median - 0.25, 2)}×`) +
        (o.bare_unauthorized ? `; the bare Worker's same 401 after the same HMAC check of the key (q) costs ${us(o.bare_unauthorized)} over (lf); the 401 less it: ${fmtRange(ref.invalid_key_rest_vs_key)}× of (b)'s own` : ""),
    );
  }
  const counts = r.counts;
  if (counts) {
    const b = counts.b;
    const notRefresh = Object.entries(b.d1_by_statement).filter(([label]) => !REFRESH_STATEMENTS.has(label));
    const perRequest = notRefresh.filter(([label]) => !INTERVAL_FLUSH.test(label));
    const onlyRefresh = notRefresh.length === 0;
    const flushes = notRefresh.reduce((sum, [, n]) => sum + n, 0);
    const flushesBounded = perRequest.length === 0 && flushes <= Math.ceil(b.elapsed_s / USAGE_FLUSH_INTERVAL_S) + 1;
    push(
      "(b) zero D1 queries per 1,000 requests",
      `${b.d1_round_trips_per_1000} per 1,000 (${b.d1_round_trips} in ${b.requests} requests over ${b.elapsed_s} s: ${JSON.stringify(b.d1_by_statement)})`,
      b.d1_round_trips === 0 ? true : onlyRefresh ? "refresh only" : flushesBounded ? "refresh and interval flushes only" : false,
      b.d1_round_trips === 0
        ? ""
        : onlyRefresh
          ? "every query is a cache_ttl_s refresh (per isolate per 10 s, not per request)"
          : flushesBounded
            ? `the rest are cache_ttl_s refreshes; ${flushes} background write(s) of the usage counted in memory, at most one per ${USAGE_FLUSH_INTERVAL_S} s flush interval (not per request)`
            : "queries that are neither TTL refreshes nor the interval's usage flushes",
    );
    push("(b) zero Durable Object calls per 1,000 requests", `${b.durable_object_calls_per_1000} per 1,000`, b.durable_object_calls === 0);
    const c = counts.c;
    push(
      "(c) exactly two Durable Object calls per upload",
      `${c.durable_object_calls_per_upload} per upload (${JSON.stringify(c.durable_object_by_method)} for ${c.requests} uploads)`,
      c.durable_object_calls === 2 * c.requests && (c.durable_object_by_method.reserve ?? 0) === c.requests,
    );
  }
  const abuse = r.abuse;
  if (abuse) {
    const codes = Object.keys(abuse.flood.status);
    const only = codes.every((code) => code === "401" || code === "429");
    push(
      "flood answered 401/429 only, no 5xx",
      `flood ${JSON.stringify(abuse.flood.status)}${abuse.flood.errors ? `, ${abuse.flood.errors} socket errors` : ""}; legitimate probe during it ${JSON.stringify(abuse.probe.during_flood.status)}`,
      abuse.flood.five_xx === 0 && only && abuse.flood.errors === 0 && abuse.probe.during_flood.five_xx === 0,
      abuse.probe.during_flood.five_xx > 0 ? `the legitimate key got ${abuse.probe.during_flood.five_xx} × 5xx: ${JSON.stringify(abuse.probe.during_flood.server_errors[0]?.body?.split("\n")[0] ?? "")}` : "",
    );
    const ratio = abuse.probe.p99_during_over_alone;
    push(
      "legitimate-key p99 during the flood ≤ 3× unloaded (issue 24; issue 11 asked 2×)",
      `${abuse.probe.during_flood.p99_ms} ms vs ${abuse.probe.alone.p99_ms} ms unloaded = ${ratio}×`,
      ratio <= 3,
      (ratio <= 3 ? "" : `gap ${round(ratio - 3, 2)}×`) + (abuse.bare_control?.latency ? `; the bare Worker under the same flood: ${abuse.bare_control.latency.p99_during_over_alone}×` : ""),
    );
    const m = abuse.memory;
    const heap = m.gateway_js_heap_used_after_gc_mib;
    const rss = m.workerd_rss_kib;
    const secondGrowthMib = heap.after_second_flood - heap.after_flood;
    push(
      "limiter memory flat",
      `limiter table ${m.limiter_table_bytes?.toLocaleString("en-US") ?? "?"} bytes, preallocated; gateway JS heap after GC ${heap.before} → ${heap.after_flood} → ${heap.after_second_flood} MiB (before, after ${abuse.flood.requests.toLocaleString("en-US")} fresh callers, after ${(2 * abuse.flood.requests).toLocaleString("en-US")}); workerd RSS ${(rss.before / 1024).toFixed(0)} → ${(rss.after_flood / 1024).toFixed(0)} → ${(rss.after_second_flood / 1024).toFixed(0)} MiB`,
      secondGrowthMib <= 1,
      `flat = the heap grows ≤ 1 MiB over the second flood. RSS is not the gateway's: the bare Worker's workerd went ${abuse.bare_control ? `${(abuse.bare_control.before.rss_kib / 1024).toFixed(0)} → ${(abuse.bare_control.after.rss_kib / 1024).toFixed(0)} MiB` : "?"} over the same ${abuse.flood.requests.toLocaleString("en-US")} requests with a JS heap of ${abuse.bare_control?.after.js_heap_used_after_gc_mib ?? "?"} MiB`,
    );
  }
  return t;
}

function verdict(met) {
  if (met === true) return "met";
  if (met === false) return "**missed**";
  return String(met);
}

/** What each extra profile of the bench is of. */
const PROFILE_NAMES = {
  rate_limited: "a 429 (a key over its limit)",
  invalid_key: "a 401 (made-up keys from fresh addresses)",
  off: '(d), mode "off" (the forward alone)',
};

export function markdownSummary(r) {
  const out = [];
  const m = r.machine;
  out.push(`# Tollgate bench — ${m.date}`);
  out.push("");
  out.push(`Machine: ${m.cpu_model}, ${m.cpu_count} cores, ${Math.round(m.total_memory_mib / 1024)} GiB; ${m.os}; Node ${m.node}; ${m.wrangler ? `wrangler ${m.wrangler}` : "wrangler ?"}; commit ${m.git_commit}${m.src_uncommitted_changes ? " (+ uncommitted src changes)" : ""}. Total run ${r.total_runtime_s} s.`);
  out.push("");
  if (r.engine?.skipped) out.push(`Engine: skipped — ${r.engine.skipped}`);
  else if (r.engine) out.push(`Engine: ran \`npm run bench:engine\` in ${r.engine.elapsed_s} s; its figures are in bench/results/engine.json and the Engine section of docs/performance.md.`);
  out.push("");
  const e2e = r.end_to_end;
  if (e2e) {
    const s = e2e.settings;
    out.push(`## End to end`);
    out.push("");
    out.push(`Throughput: closed loop, ${s.connections} connections, ${s.rounds} interleaved rounds × ${s.durationS} s after ${s.warmupS} s warm-up. Latency: open loop at a fixed ${e2e.latency.rate_per_s} req/s for every target, ${s.latencyRounds} interleaved rounds × ${s.latencyDurationS} s, counted from when each request was due. Medians over rounds; ratios to (a) as median (min–max) over rounds.`);
    out.push("");
    out.push(`| target | requests/s (saturation) | vs (a) | p50 ms at ${e2e.latency.rate_per_s}/s | p99 ms at ${e2e.latency.rate_per_s}/s | p50 vs (a) | p99 vs (a) | p50 / p99 ms at saturation |`);
    out.push("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (const [name, v] of Object.entries(e2e.throughput.summary)) {
      const tr = e2e.throughput.ratios[`${name}/a`];
      const l = e2e.latency.summary[name];
      const lr = e2e.latency.ratios[`${name}/a`];
      const fixed = l ? `| ${l.p50_ms.toFixed(2)} | ${l.p99_ms.toFixed(2)} | ${lr ? fmtRange(lr.p50) : "1"} | ${lr ? fmtRange(lr.p99) : "1"} ` : "| – | – | – | – ";
      out.push(`| ${NAMES[name]} | ${v.requests_per_s.toFixed(0)} | ${tr ? fmtRange(tr.throughput) : "1"} ${fixed}| ${v.p50_ms.toFixed(2)} / ${v.p99_ms.toFixed(2)} |`);
    }
    out.push("");
    const t = e2e.throughput.summary;
    const l = e2e.latency.summary;
    const usPerRequest = (x) => round((1 / t[x].requests_per_s - 1 / t.a.requests_per_s) * 1e6, 0);
    out.push(
      `Added per request: at ${e2e.latency.rate_per_s} req/s, (b) adds ${round(l.b.p50_ms - l.a.p50_ms, 2)} ms at p50 and (c) ${round(l.c.p50_ms - l.a.p50_ms, 2)} ms; at saturation the workerd spends ${usPerRequest("b")} µs more per request on (b) than on (a), ${usPerRequest("c")} µs more on (c)${t.d ? `, ${usPerRequest("d")} µs more with mode "off" (d)` : ""}${t.e ? `, ${usPerRequest("e")} µs more for (b) without its request-log line (e)` : ""}${t.f ? `, ${usPerRequest("f")} µs more for (d) without it (f)` : ""}${t.g ? `; the controls: ${usPerRequest("g")} µs more for the contract's work alone (g), ${usPerRequest("h")} µs without its line (h)` : ""}.`,
    );
    out.push("");
    const bad = [...Object.entries(e2e.throughput.summary), ...Object.entries(e2e.latency.summary)].filter(([, v]) => v.non_2xx > 0 || v.errors > 0);
    out.push(
      bad.length === 0
        ? "Every response in both phases was as expected (2xx, or the refusal a target is made of); no socket errors."
        : `Not all as expected (2xx, or the refusal a target is made of): ${bad.map(([n, v]) => `${n} ${v.non_2xx} non-2xx, ${v.errors} socket errors${Object.keys(v.error_codes ?? {}).length ? ` ${JSON.stringify(v.error_codes)}` : ""}`).join("; ")}.`,
    );
    out.push("");
  }
  const c = r.counts;
  if (c) {
    out.push("## I/O per request (counting wrapper around the same bundle)");
    out.push("");
    out.push("| run | requests | D1 round trips | per 1,000 | Durable Object calls | per 1,000 | what |");
    out.push("| --- | ---: | ---: | ---: | ---: | ---: | --- |");
    const row = (label, x, what) => out.push(`| ${label} | ${x.requests} | ${x.d1_round_trips} | ${x.d1_round_trips_per_1000} | ${x.durable_object_calls} | ${x.durable_object_calls_per_1000} | ${what} |`);
    row(`(b) GET, ${c.b.elapsed_s} s`, c.b, Object.keys(c.b.d1_by_statement).length ? `D1: ${JSON.stringify(c.b.d1_by_statement)}` : "none");
    row("(c) PUT, unique names", c.c, `DO: ${JSON.stringify(c.c.durable_object_by_method)} = ${c.c.durable_object_calls_per_upload} per upload`);
    row("(c) PUT, re-upload of owned names", c.c_reupload, `DO: ${JSON.stringify(c.c_reupload.durable_object_by_method)} = ${c.c_reupload.durable_object_calls_per_upload} per upload`);
    out.push("");
  }
  const a = r.abuse;
  if (a) {
    out.push(`## Abuse load (${a.flood.requests.toLocaleString("en-US")} requests, made-up well-formed keys from fresh random addresses, ${a.settings.floodConnections} connections, as fast as the gateway answers)`);
    out.push("");
    out.push(`Flood: ${a.flood.responses} answers in ${a.flood.elapsed_s} s (${a.flood.requests_per_s} /s; p50 ${a.flood.latency_ms.p50} ms, p99 ${a.flood.latency_ms.p99} ms), by status ${JSON.stringify(a.flood.status)}, ${a.flood.five_xx} × 5xx, ${a.flood.errors} socket errors; ${a.flood.d1_round_trips} D1 round trips (${a.flood.d1_round_trips_per_flood_request} per flood request: ${JSON.stringify(a.flood.d1_by_statement)}).`);
    out.push("");
    out.push(`| legitimate key, open loop at ${a.probe.rate_per_s}/s | p50 ms | p99 ms | answers |`);
    out.push("| --- | ---: | ---: | --- |");
    out.push(`| alone | ${a.probe.alone.p50_ms} | ${a.probe.alone.p99_ms} | ${JSON.stringify(a.probe.alone.status)} |`);
    out.push(`| during the flood | ${a.probe.during_flood.p50_ms} | ${a.probe.during_flood.p99_ms} | ${JSON.stringify(a.probe.during_flood.status)} |`);
    const bl = a.bare_control?.latency;
    if (bl) {
      out.push(`| control: the same probe through the bare Worker, alone | ${bl.alone.p50_ms} | ${bl.alone.p99_ms} | ${JSON.stringify(bl.alone.status)} |`);
      out.push(`| control: ... during a flood of ${bl.flood.responses} requests it answers itself (${bl.flood.requests_per_s} /s) | ${bl.during_flood.p50_ms} | ${bl.during_flood.p99_ms} | ${JSON.stringify(bl.during_flood.status)} |`);
    }
    out.push("");
    if (a.probe.during_flood.server_errors?.length) out.push(`Its 5xx: \`${a.probe.during_flood.server_errors[0].body.split("\n")[0]}\``);
    out.push("");
    const m = a.memory;
    const rss = m.workerd_rss_kib;
    const heap = m.gateway_js_heap_used_after_gc_mib;
    out.push(`| memory | before | after the flood | after a second flood |`);
    out.push("| --- | ---: | ---: | ---: |");
    out.push(`| limiter table (preallocated, limiter.max_memory_mib 16) | ${m.limiter_table_bytes?.toLocaleString("en-US")} B | same | same |`);
    out.push(`| gateway isolate JS heap after a full GC | ${heap.before} MiB | ${heap.after_flood} MiB | ${heap.after_second_flood} MiB |`);
    out.push(`| workerd process RSS | ${(rss.before / 1024).toFixed(1)} MiB | ${(rss.after_flood / 1024).toFixed(1)} MiB | ${(rss.after_second_flood / 1024).toFixed(1)} MiB |`);
    if (a.bare_control) out.push(`| control: bare Worker's workerd RSS, same count of anonymous requests | ${(a.bare_control.before.rss_kib / 1024).toFixed(1)} MiB | ${(a.bare_control.after.rss_kib / 1024).toFixed(1)} MiB | – |`);
    out.push("");
  }
  if (r.profile) {
    const p = r.profile;
    out.push(`## Where (b)'s time goes (CPU profile of the gateway's isolate, ${p.seconds} s of (b) load, ${p.requests_per_s} req/s under the profiler)`);
    out.push("");
    out.push(`Busy time: ${Math.round(p.summary.busy_split.worker_javascript * 100)} % Worker JavaScript (Tollgate, hono, zod, drizzle), ${Math.round(p.summary.busy_split.garbage_collector * 100)} % GC, ${Math.round(p.summary.busy_split.runtime_native_and_other * 100)} % runtime (native: fetch, streams, Headers, Response). A native call's time is counted in the JavaScript function that made it when V8 shows no frame for it: \`console.log\` (the request-log line) lands in the function that writes it, and weighs more here than without an inspector attached, which is also sent each line; (e) measures the line's cost without one.`);
    out.push("");
    out.push("| self time | function |");
    out.push("| ---: | --- |");
    for (const row of p.summary.top_self.slice(0, 12)) out.push(`| ${(row.share * 100).toFixed(1)} % | \`${row.function}\` |`);
    out.push("");
  }
  for (const [name, p] of Object.entries(r.profiles ?? {})) {
    out.push(`### The same for ${PROFILE_NAMES[name] ?? name} (${p.requests_per_s} req/s under the profiler, ${JSON.stringify(p.status)})`);
    out.push("");
    out.push(`Busy time: ${Math.round(p.summary.busy_split.worker_javascript * 100)} % Worker JavaScript, ${Math.round(p.summary.busy_split.garbage_collector * 100)} % GC, ${Math.round(p.summary.busy_split.runtime_native_and_other * 100)} % runtime.`);
    out.push("");
    out.push("| self time | function |");
    out.push("| ---: | --- |");
    for (const row of p.summary.top_self.slice(0, 10)) out.push(`| ${(row.share * 100).toFixed(1)} % | \`${row.function}\` |`);
    out.push("");
  }
  const targets = r.targets;
  if (targets?.length) {
    out.push("## Targets");
    out.push("");
    out.push("| target | measured | verdict | note |");
    out.push("| --- | --- | --- | --- |");
    for (const t of targets) out.push(`| ${t.target} | ${t.measured} | ${verdict(t.met)} | ${t.note} |`);
    out.push("");
  }
  return out.join("\n");
}

// Abuse load: a flood of well-formed keys nobody minted (`tg_<12>_<32>`: they
// pass the format check, so the flood costs whatever refusing a made-up key
// costs) from fresh random addresses (CF-Connecting-IP, so the per-address
// auth-failure gate never trips), against a gateway whose legitimate key is
// limited. The flood is closed loop (autocannon, as fast as the gateway
// answers). A probe with the legitimate key runs open loop at a modest fixed
// rate, alone first and then during the flood. Memory is read before the
// flood, after it, and after a second flood of the same size (no probe): the
// workerd process's RSS and the gateway isolate's JS heap after a full GC
// (through the inspector; a heap snapshot stalls the isolate, so none is taken
// while the probe runs).
import { readCounts } from "./counts.mjs";
import { heapAfterGc, inspect } from "./cpu-profile.mjs";
import { memoryOf } from "./instances.mjs";
import { runLoad, startLoad } from "./load.mjs";
import { round } from "./stats.mjs";

const PROBE_PATH = "/bench/item";
const MIB = 1024 * 1024;

function mib(bytes) {
  return bytes === null || bytes === undefined ? null : round(bytes / MIB, 2);
}

function addStatus(into, from) {
  for (const [code, n] of Object.entries(from)) into[code] = (into[code] ?? 0) + n;
  return into;
}

/** worker: a gateway started with extra.inspectorPort = inspectorPort. */
export async function runAbuse(worker, inspectorPort, legitimateKey, settings, log) {
  const probe = { url: worker.url, kind: "get", path: PROBE_PATH, headers: { authorization: `Bearer ${legitimateKey}` }, ratePerS: settings.probeRatePerS, warmupS: 0.5 };
  await runLoad({ ...probe, durationS: 2, label: "probe warm-up" });
  const session = await inspect(inspectorPort, worker.name);
  const memory = async () => {
    const heap = await heapAfterGc(session);
    return { rss_kib: memoryOf(worker.pid)?.rss_kib ?? null, js_heap_used_after_gc_mib: mib(heap.used_bytes) };
  };
  try {
    const before = await memory();
    const alone = await runLoad({ ...probe, durationS: settings.probeAloneS, label: "probe alone" });
    log(`  probe alone: p50 ${alone.latency.p50_ms} ms, p99 ${alone.latency.p99_ms} ms, status ${JSON.stringify(alone.status)}`);

    await readCounts(worker.url, true);
    const rssSamples = [];
    const sampler = setInterval(() => {
      const m = memoryOf(worker.pid);
      if (m) rssSamples.push(m.rss_kib);
    }, 250);
    const during = startLoad({ ...probe, durationS: settings.floodMaxS, label: "probe during flood" });
    const flood = { url: worker.url, kind: "flood", path: PROBE_PATH, connections: settings.floodConnections, amount: settings.floodRequests, maxS: settings.floodMaxS };
    let floodRun;
    try {
      floodRun = await runLoad({ ...flood, label: "flood" });
    } finally {
      during.stop();
      clearInterval(sampler);
    }
    const probeDuring = await during.done;
    const counts = await readCounts(worker.url, true);
    const afterFlood = await memory();
    // A second flood of the same size, with no probe, only to see whether
    // memory keeps growing with fresh callers or has levelled off.
    await runLoad({ ...flood, label: "second flood" });
    const afterSecond = await memory();

    const status = floodRun.status;
    const fiveXx = (s) => Object.entries(s).filter(([code]) => Number(code) >= 500).reduce((t, [, n]) => t + n, 0);
    log(`  flood: ${floodRun.responses} answers in ${floodRun.elapsed_s} s, status ${JSON.stringify(status)}; probe during: p50 ${probeDuring.latency.p50_ms} ms, p99 ${probeDuring.latency.p99_ms} ms, status ${JSON.stringify(probeDuring.status)}`);
    log(`  memory: workerd RSS ${before.rss_kib} → ${afterFlood.rss_kib} → ${afterSecond.rss_kib} KiB; gateway JS heap after GC ${before.js_heap_used_after_gc_mib} → ${afterFlood.js_heap_used_after_gc_mib} → ${afterSecond.js_heap_used_after_gc_mib} MiB`);

    return {
      settings,
      flood: {
        requests: settings.floodRequests,
        responses: floodRun.responses,
        errors: floodRun.errors + floodRun.timeouts,
        elapsed_s: floodRun.elapsed_s,
        requests_per_s: floodRun.requests_per_s,
        status,
        five_xx: fiveXx(status),
        server_errors: floodRun.server_errors.slice(0, 3),
        latency_ms: { p50: floodRun.latency.p50_ms, p99: floodRun.latency.p99_ms },
        d1_round_trips: counts.d1_round_trips,
        d1_by_statement: counts.d1,
        d1_round_trips_per_flood_request: round(counts.d1_round_trips / floodRun.responses, 3),
        durable_object_calls: counts.durable_object_calls,
      },
      probe: {
        rate_per_s: settings.probeRatePerS,
        alone: { p50_ms: alone.latency.p50_ms, p99_ms: alone.latency.p99_ms, responses: alone.responses, status: alone.status },
        during_flood: { p50_ms: probeDuring.latency.p50_ms, p99_ms: probeDuring.latency.p99_ms, responses: probeDuring.responses, status: probeDuring.status, five_xx: fiveXx(probeDuring.status), server_errors: probeDuring.server_errors.slice(0, 3) },
        p50_during_over_alone: round(probeDuring.latency.p50_ms / alone.latency.p50_ms, 2),
        p99_during_over_alone: round(probeDuring.latency.p99_ms / alone.latency.p99_ms, 2),
      },
      // The gateway's own request-log lines for its 5xx answers (first few).
      request_log_5xx: worker.serverErrorLog,
      memory: {
        workerd_rss_kib: { before: before.rss_kib, after_flood: afterFlood.rss_kib, after_second_flood: afterSecond.rss_kib, peak_sampled_during_flood: rssSamples.length ? Math.max(...rssSamples) : null },
        gateway_js_heap_used_after_gc_mib: { before: before.js_heap_used_after_gc_mib, after_flood: afterFlood.js_heap_used_after_gc_mib, after_second_flood: afterSecond.js_heap_used_after_gc_mib },
      },
    };
  } finally {
    session.close();
  }
}

/** The control: the bare Worker's workerd RSS over the same number of anonymous requests from fresh addresses. */
export async function bareControl(worker, inspectorPort, settings) {
  const session = await inspect(inspectorPort, worker.name);
  try {
    const before = { rss_kib: memoryOf(worker.pid)?.rss_kib ?? null, js_heap_used_after_gc_mib: mib((await heapAfterGc(session)).used_bytes) };
    const load = await runLoad({ url: worker.url, kind: "flood", keyShape: "none", path: PROBE_PATH, connections: settings.floodConnections, amount: settings.floodRequests, maxS: settings.floodMaxS, label: "bare control" });
    const after = { rss_kib: memoryOf(worker.pid)?.rss_kib ?? null, js_heap_used_after_gc_mib: mib((await heapAfterGc(session)).used_bytes) };
    return { requests: load.responses, status: load.status, elapsed_s: load.elapsed_s, before, after, latency: await bareFloodLatency(worker, settings) };
  } finally {
    session.close();
  }
}

/**
 * The runtime's own floor for the probe's p99 under a flood: the same probe
 * (a forwarded GET, open loop) against the bare Worker, alone and then during
 * a flood of the same size and connections whose requests the bare Worker
 * answers itself without a fetch (as the gateway answers a made-up key). What
 * the probe loses here is workerd queueing requests behind the flood on one
 * thread, not anything the gateway does.
 */
async function bareFloodLatency(worker, settings) {
  const probe = { url: worker.url, kind: "get", path: PROBE_PATH, ratePerS: settings.probeRatePerS, warmupS: 0.5 };
  await runLoad({ ...probe, durationS: 2, label: "bare probe warm-up" });
  const alone = await runLoad({ ...probe, durationS: settings.probeAloneS, label: "bare probe alone" });
  const during = startLoad({ ...probe, durationS: settings.floodMaxS, label: "bare probe during flood" });
  let flood;
  try {
    flood = await runLoad({ url: worker.url, kind: "flood", keyShape: "none", path: "/bench/local", connections: settings.floodConnections, amount: settings.floodRequests, maxS: settings.floodMaxS, label: "bare flood" });
  } finally {
    during.stop();
  }
  const probeDuring = await during.done;
  return {
    flood: { responses: flood.responses, elapsed_s: flood.elapsed_s, requests_per_s: round(flood.responses / flood.elapsed_s, 1), status: flood.status },
    alone: { p50_ms: alone.latency.p50_ms, p99_ms: alone.latency.p99_ms, status: alone.status },
    during_flood: { p50_ms: probeDuring.latency.p50_ms, p99_ms: probeDuring.latency.p99_ms, status: probeDuring.status },
    p99_during_over_alone: round(probeDuring.latency.p99_ms / alone.latency.p99_ms, 2),
  };
}

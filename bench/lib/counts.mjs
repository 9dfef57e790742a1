// D1 queries and Durable Object calls per 1,000 requests, counted by the
// bench-only wrapper Worker (bench/count-worker.js) around Tollgate's own
// bundle: every D1 statement and every Durable Object stub call the gateway
// makes passes through a counting proxy. Counts are read (and reset) at the
// wrapper's /__bench/counts.
import { runLoad } from "./load.mjs";
import { UPLOAD_BODY_BYTES } from "./e2e.mjs";
import { round } from "./stats.mjs";

export async function readCounts(url, reset = false) {
  const res = await fetch(`${url}/__bench/counts`, { method: reset ? "POST" : "GET" });
  return res.json();
}

function per1000(n, requests) {
  return requests > 0 ? round((n / requests) * 1000, 3) : null;
}

function describe(counts, load) {
  const requests = counts.requests;
  return {
    requests,
    elapsed_s: load.elapsed_s,
    status: load.status,
    d1_round_trips: counts.d1_round_trips,
    d1_statements: counts.d1_statements,
    d1_by_statement: counts.d1,
    durable_object_calls: counts.durable_object_calls,
    durable_object_by_method: counts.durable_object,
    d1_round_trips_per_1000: per1000(counts.d1_round_trips, requests),
    durable_object_calls_per_1000: per1000(counts.durable_object_calls, requests),
  };
}

/**
 * settings: {connections, bDurationS, uploads, dedupUploads}. The (b) window
 * is longer than cache_ttl_s (10 s) on purpose, so the key and override
 * caches' one refresh per TTL shows up in the count, as it would in a
 * deployment.
 */
export async function runCounts(url, headers, settings, log) {
  const common = { url, headers, connections: settings.connections };
  // Warm: the first request of the key loads it (and the override snapshot) from D1.
  await runLoad({ ...common, kind: "get", path: "/bench/item", amount: 200, maxS: 30 });
  await readCounts(url, true);
  const bLoad = await runLoad({ ...common, kind: "get", path: "/bench/item", durationS: settings.bDurationS });
  const b = describe(await readCounts(url, true), bLoad);
  log(`  (b) ${b.requests} requests in ${b.elapsed_s} s: ${b.d1_round_trips} D1 round trips ${JSON.stringify(b.d1_by_statement)}, ${b.durable_object_calls} Durable Object calls`);

  const cLoad = await runLoad({ ...common, kind: "upload", bodyBytes: UPLOAD_BODY_BYTES, prefix: "count", amount: settings.uploads, maxS: 60 });
  const c = describe(await readCounts(url, true), cLoad);
  log(`  (c) ${c.requests} uploads (unique names): ${c.durable_object_calls} Durable Object calls ${JSON.stringify(c.durable_object_by_method)}, ${c.d1_round_trips} D1 round trips`);

  // Re-uploads of objects the tenant already owns: the dedup path.
  const dLoad = await runLoad({ ...common, kind: "upload", bodyBytes: UPLOAD_BODY_BYTES, prefix: "count", names: settings.dedupNames, amount: settings.dedupUploads, maxS: 60 });
  const dedup = describe(await readCounts(url, true), dLoad);
  log(`  (c, re-uploads of ${settings.dedupNames} owned names) ${dedup.requests} uploads: ${dedup.durable_object_calls} Durable Object calls ${JSON.stringify(dedup.durable_object_by_method)}`);

  return {
    b,
    c: { ...c, durable_object_calls_per_upload: round(c.durable_object_calls / c.requests, 4), object_names: "unique (count-<n>)" },
    c_reupload: { ...dedup, durable_object_calls_per_upload: round(dedup.durable_object_calls / dedup.requests, 4), object_names: `${settings.dedupNames} names already owned, reused` },
  };
}

// `npm run bench:refusals` (node bench/refusal-floor.mjs [--rounds=N]):
// what a refusal costs against the least any Worker must do to give the same
// answer. Closed-loop throughput on 8 connections, interleaved rounds, as the
// end-to-end bench measures (a) and (b); a request's own cost is 1/requests
// per second less its baseline's in the same round (at saturation workerd's
// thread is the bottleneck):
//
//   (b) the gateway admitting a cached key, against (a) the bare Worker
//       forwarding: an admitted request's own cost, the figure the refusal
//       targets are a share of;
//   (r) the gateway's 429 for a key over its limit; (p) the bare Worker
//       answering the same 429 with no check before it; (s) the bare Worker
//       as the least rate limiter giving that 429 (the credential read, its
//       record from a Map, two GCRA limits, the answer: /bench/limited in
//       bench/bare-worker.js); each against (l), the bare Worker answering
//       by itself;
//   (u) the gateway's 401 for made-up keys from fresh addresses; (q) the bare
//       Worker's same 401 after the same HMAC check of the key; each against
//       (lf), (l) under the same random keys and addresses;
//   (sa) and (qa): (s) and (q) with the least of the accounting the contract
//       asks of a refusal besides its answer (for the 401, the auth-failure
//       charge of its address; for both, the sustained-refusal count, the
//       traffic count with its refused callers, the request log's per-second
//       cap with its summary counts, and the line of the first 50 refusals a
//       second: /bench/limited-accounted, /bench/unauthorized-accounted).
//
// A benchmark, never a timed test; prints a Markdown table and writes
// bench/results/refusal-floor.json.
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupAll, onCleanup } from "./lib/cleanup.mjs";
import { adminToken, EXHAUSTED_TENANT, tollgateConfig, UNLIMITED_TENANT } from "./lib/gateway-config.mjs";
import { applyMigrations, buildGateway, readCompatibility, seedTenantAndKey, startWorker, waitHealthy } from "./lib/instances.mjs";
import { runLoad } from "./lib/load.mjs";
import { median, ownUsPerRound, round, spread } from "./lib/stats.mjs";
import { startOriginThread } from "./origin.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const ROOT = join(here, "..");
const ROUNDS = Number(process.argv.find((a) => a.startsWith("--rounds="))?.split("=")[1] ?? 5);
const CONNECTIONS = 8;
const DURATION_S = 4;
const PATH = "/bench/item?x=1";

let out;
try {
  const bundle = buildGateway(ROOT, join(here, ".build"));
  const compat = readCompatibility(ROOT);
  const token = adminToken();
  const origin = await startOriginThread();
  onCleanup(() => origin.close());
  const originUrl = `http://127.0.0.1:${origin.port}`;
  const bare = await startWorker({ name: "refusals-bare", scriptPath: join(here, "bare-worker.js"), bindings: { ORIGIN_URL: originUrl }, compat });
  const gateway = await startWorker({ name: "refusals-gateway", scriptPath: bundle, gateway: true, stateDir: join(here, ".state", "refusals-gateway"), compat, bindings: { ORIGIN_URL: originUrl, ADMIN_TOKEN: token, TOLLGATE: tollgateConfig("enforce") } });
  await applyMigrations(ROOT, gateway);
  await waitHealthy(gateway.url);
  const hot = await seedTenantAndKey(gateway.url, token, "bench", UNLIMITED_TENANT, "refusals (b)");
  const exhausted = await seedTenantAndKey(gateway.url, token, "exhausted", EXHAUSTED_TENANT, "refusals (r)");
  const get = (url, path, headers, expect = 200, kind = "get") => ({ url, kind, path, headers, expect, connections: CONNECTIONS });
  const specs = {
    a: get(bare.url, PATH),
    b: get(gateway.url, PATH, { authorization: `Bearer ${hot}` }),
    l: get(bare.url, "/bench/local"),
    p: get(bare.url, "/bench/problem", undefined, 429),
    s: get(bare.url, "/bench/limited", { authorization: `Bearer ${exhausted}` }, 429),
    sa: get(bare.url, "/bench/limited-accounted", { authorization: `Bearer ${exhausted}` }, 429),
    r: get(gateway.url, PATH, { authorization: `Bearer ${exhausted}` }, 429),
    lf: get(bare.url, "/bench/local", undefined, 200, "flood"),
    q: get(bare.url, "/bench/unauthorized", undefined, 401, "flood"),
    qa: get(bare.url, "/bench/unauthorized-accounted", undefined, 401, "flood"),
    u: get(gateway.url, PATH, undefined, 401, "flood"),
  };
  for (const spec of Object.values(specs)) await runLoad({ ...spec, durationS: 2 });
  const rps = Object.fromEntries(Object.keys(specs).map((n) => [n, []]));
  for (let r = 1; r <= ROUNDS; r++) {
    for (const [name, spec] of Object.entries(specs)) {
      const res = await runLoad({ ...spec, durationS: DURATION_S });
      const expected = res.status[spec.expect] ?? 0;
      if (expected < 0.99 * res.responses) throw new Error(`${name}: ${JSON.stringify(res.status)}`);
      rps[name].push(res.requests_per_s);
    }
    console.log(`round ${r}: ${Object.entries(rps).map(([n, v]) => `${n} ${v.at(-1)}`).join(", ")} req/s`);
  }
  const own = (x, base) => ownUsPerRound(rps[x], rps[base]);
  const key = own("b", "a");
  const summary = (values, digits = 1) => {
    const s = spread(values);
    return { median: round(median(values), digits), min: round(s.min, digits), max: round(s.max, digits) };
  };
  const share = (values) => summary(values.map((v, i) => v / key[i]), 3);
  out = {
    at: new Date().toISOString(),
    load_average: os.loadavg(),
    rounds: ROUNDS,
    requests_per_s: Object.fromEntries(Object.entries(rps).map(([n, v]) => [n, round(median(v), 0)])),
    own_us: {
      admitted_key: summary(key),
      gateway_429: summary(own("r", "l")),
      bare_429_answer: summary(own("p", "l")),
      bare_least_limiter_429: summary(own("s", "l")),
      bare_least_limiter_429_accounted: summary(own("sa", "l")),
      gateway_401: summary(own("u", "lf")),
      bare_hmac_401: summary(own("q", "lf")),
      bare_hmac_401_accounted: summary(own("qa", "lf")),
    },
    vs_admitted_key: {
      gateway_429: share(own("r", "l")),
      bare_429_answer: share(own("p", "l")),
      bare_least_limiter_429: share(own("s", "l")),
      bare_least_limiter_429_accounted: share(own("sa", "l")),
      gateway_401: share(own("u", "lf")),
      bare_hmac_401: share(own("q", "lf")),
      bare_hmac_401_accounted: share(own("qa", "lf")),
    },
  };
} finally {
  await cleanupAll();
}
const names = {
  gateway_429: "(r) the gateway's 429",
  bare_429_answer: "(p) the bare Worker's same 429, no check",
  bare_least_limiter_429: "(s) the least limiter giving that 429",
  bare_least_limiter_429_accounted: "(sa) the same with the refusal's accounting",
  gateway_401: "(u) the gateway's 401",
  bare_hmac_401: "(q) the bare Worker's same 401 after the same HMAC check",
  bare_hmac_401_accounted: "(qa) the same with the refusal's accounting",
};
const fmt = (s, d = 1) => `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
const lines = [
  `An admitted request's own cost ((b) less (a)): ${fmt(out.own_us.admitted_key)} µs.`,
  "",
  "| answer | own µs, median (min–max) | against an admitted request's own |",
  "| --- | ---: | ---: |",
  ...Object.entries(names).map(([k, label]) => `| ${label} | ${fmt(out.own_us[k])} | ${fmt(out.vs_admitted_key[k], 2)}× |`),
];
console.log(lines.join("\n"));
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(join(here, "results", "refusal-floor.json"), `${JSON.stringify(out, null, 2)}\n`);

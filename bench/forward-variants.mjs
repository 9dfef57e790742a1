// `npm run bench:forward` (node bench/forward-variants.mjs [--rounds=N]):
// what each piece of the work the gateway's contract asks of an admitted
// request costs in workerd, on its own (bench/forward-variants-worker.js): the origin request's headers
// filtered (req), awaiting the fetch in the handler (await), the answer
// copied (copy), its hop-by-hop names deleted (copy-hop), five RateLimit
// headers set (copy-rate), a waitUntil (wait), one request-log line (log),
// and the answer's part all together (all). Measured as the end-to-end bench
// measures (a) and (b): closed-loop throughput on 8 connections, the
// variants interleaved round by round; a variant's cost is 1/requests per
// second less the bare forward's in the same round (at saturation workerd's
// thread is the bottleneck). Throughput, not CPU slices: on this VM a
// workerd's CPU per request moves by a fifth from one 400-request batch to
// the next. A piece alone costs 15–45 µs and its rounds still spread by
// tens of µs (read the medians); all of them together match (g) of the
// end-to-end bench. A benchmark, never a timed test; prints a Markdown
// table and writes bench/results/forward-variants.json.
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cleanupAll, onCleanup } from "./lib/cleanup.mjs";
import { readCompatibility, startWorker } from "./lib/instances.mjs";
import { runLoad } from "./lib/load.mjs";
import { median, ownUsPerRound, round, spread } from "./lib/stats.mjs";
import { startOriginThread } from "./origin.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const ROUNDS = Number(process.argv.find((a) => a.startsWith("--rounds="))?.split("=")[1] ?? 3);
const VARIANTS = ["bare", "req", "await", "copy", "copy-hop", "copy-rate", "wait", "log", "all"];
const CONNECTIONS = 8;
const DURATION_S = 4;

let out;
try {
  const origin = await startOriginThread();
  onCleanup(() => origin.close());
  const worker = await startWorker({ name: "forward-variants", scriptPath: join(here, "forward-variants-worker.js"), bindings: { ORIGIN_URL: `http://127.0.0.1:${origin.port}` }, compat: readCompatibility(join(here, "..")) });
  const spec = (v) => ({ url: worker.url, kind: "get", path: `/bench/item?v=${v}`, connections: CONNECTIONS });
  for (const v of VARIANTS) await runLoad({ ...spec(v), durationS: 1 });
  const rps = Object.fromEntries(VARIANTS.map((v) => [v, []]));
  for (let r = 1; r <= ROUNDS; r++) {
    for (const v of VARIANTS) {
      const res = await runLoad({ ...spec(v), durationS: DURATION_S });
      if (Object.keys(res.status).some((code) => code !== "200")) throw new Error(`${v}: ${JSON.stringify(res.status)}`);
      rps[v].push(res.requests_per_s);
      console.log(`round ${r} ${v}: ${res.requests_per_s} req/s`);
    }
  }
  out = { at: new Date().toISOString(), load_average: os.loadavg(), rounds: ROUNDS, connections: CONNECTIONS, duration_s: DURATION_S, bare_requests_per_s: round(median(rps.bare), 0), variants: {} };
  for (const v of VARIANTS.slice(1)) {
    const own = ownUsPerRound(rps[v], rps.bare);
    const ratio = rps[v].map((x, i) => x / rps.bare[i]);
    const s = spread(own);
    out.variants[v] = { requests_per_s: round(median(rps[v]), 0), vs_bare: round(median(ratio), 3), own_us: round(median(own), 1), own_min: round(s.min, 1), own_max: round(s.max, 1) };
  }
} finally {
  await cleanupAll();
}
const lines = [`The bare forward: ${out.bare_requests_per_s} requests/s (${round(1e6 / out.bare_requests_per_s, 0)} µs each).`, "", "| variant | requests/s | vs bare | µs per request over bare, median round (min–max) |", "| --- | ---: | ---: | ---: |"];
for (const [v, r] of Object.entries(out.variants)) lines.push(`| ${v} | ${r.requests_per_s} | ${r.vs_bare.toFixed(2)} | ${r.own_us} (${r.own_min}–${r.own_max}) |`);
console.log(lines.join("\n"));
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(join(here, "results", "forward-variants.json"), `${JSON.stringify(out, null, 2)}\n`);

// `npm run bench:origins`: what an origin behind a Workers service binding
// costs, against the same origin over HTTP, on 127.0.0.1 only, bounded in
// time, every workerd it starts stopped on the way out.
//
//   (s) Tollgate → service binding: a route with `origin = "svc"`,
//       `origins.svc = "service:SVC"` (env.SVC.fetch, no network hop)
//   (u) Tollgate → URL origin: the same Worker served on its own port,
//       reached through ORIGIN_URL (a loopback HTTP hop)
//   (b) a bare Worker that calls the same service binding (the floor)
//
// The origin is one small Worker (bench/service-origin.js) in every case.
// Rounds are interleaved (s, u, b, s, u, b, …) so the machine's drift hits
// each alike; the figures are medians over rounds, with the range beside.
// `--quick` shortens every round.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createRequire } from "node:module";
import { cleanupAll, onCleanup } from "./lib/cleanup.mjs";
import { buildGateway, freePort, HOST, readCompatibility, waitHealthy } from "./lib/instances.mjs";
import { runLoad } from "./lib/load.mjs";

const BENCH = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH, "..");
const QUICK = process.argv.includes("--quick");
const ROUNDS = QUICK ? 2 : 5;
const ROUND_S = QUICK ? 3 : 8;
const CONNECTIONS = 16;

const requireHere = createRequire(import.meta.url);
const requireFromWrangler = createRequire(requireHere.resolve("wrangler/package.json"));
const { Miniflare } = await import(pathToFileURL(requireFromWrangler.resolve("miniflare")).href);

const HUGE = [{ count: 100_000_000, window_s: 1 }];
const TOLLGATE = {
  request_log: false,
  origins: { svc: "service:SVC" },
  routes: [{ path: "/svc/*", origin: "svc" }],
  categories: { request: { limits: { ip: HUGE, anonymous: HUGE } } },
};

const SERVICE = { name: "svc", modules: true, scriptPath: join(BENCH, "service-origin.js") };
const BARE_SERVICE = `export default { fetch(request, env) { const url = new URL(request.url); return env.SVC.fetch(url.origin + url.pathname + url.search, { method: request.method, headers: request.headers, redirect: "manual" }); } };`;

async function start(options) {
  const port = await freePort();
  const mf = new Miniflare({ host: HOST, port, ...options });
  onCleanup(() => mf.dispose().catch(() => {}));
  const url = await mf.ready;
  return { mf, url: url.origin };
}

/** migrations/*.sql (drizzle-kit's output, split at its statement breakpoints) into the gateway's D1: blocks and keys are read from it. */
async function migrate(db) {
  const dir = join(ROOT, "migrations");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
    const statements = readFileSync(join(dir, file), "utf8").split("--> statement-breakpoint").map((s) => s.trim()).filter((s) => s.length > 0);
    await db.batch(statements.map((s) => db.prepare(s)));
  }
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main() {
  const compat = readCompatibility(ROOT);
  console.log("building the gateway bundle (wrangler deploy --dry-run) …");
  const bundle = buildGateway(ROOT, join(BENCH, ".build-origins"));

  // The origin over HTTP, for (u).
  const http = await start({ ...compat, ...SERVICE });
  // Tollgate with the origin bound as SVC, and ORIGIN_URL the HTTP copy.
  const gateway = await start({
    ...compat,
    workers: [
      {
        name: "tollgate",
        modules: true,
        modulesRules: [{ type: "ESModule", include: ["**/*.js"] }],
        scriptPath: bundle,
        bindings: { ORIGIN_URL: http.url, TOLLGATE },
        serviceBindings: { SVC: "svc" },
        d1Databases: { DB: "bench-origins" },
        durableObjects: { TENANT_QUOTA: { className: "TenantQuota", useSQLite: true }, ORG_QUOTA: { className: "OrgQuota", useSQLite: true }, LIMIT_LEDGER: { className: "LimitLedger", useSQLite: true } },
        ...compat,
      },
      { ...SERVICE, ...compat },
    ],
  });
  await migrate(await gateway.mf.getD1Database("DB", "tollgate"));
  await waitHealthy(gateway.url);
  const bare = await start({ ...compat, workers: [{ name: "bare", modules: true, script: BARE_SERVICE, serviceBindings: { SVC: "svc" }, ...compat }, { ...SERVICE, ...compat }] });

  const cases = [
    { id: "s", label: "Tollgate → service binding", url: gateway.url, path: "/svc/item?x=1" },
    { id: "u", label: "Tollgate → URL origin", url: gateway.url, path: "/url/item?x=1" },
    { id: "b", label: "bare Worker → service binding", url: bare.url, path: "/svc/item?x=1" },
  ];
  for (const c of cases) {
    const res = await fetch(c.url + c.path, { headers: { "cf-connecting-ip": "203.0.113.9" } });
    const body = await res.text();
    if (res.status !== 200 || !body.includes("service-origin")) throw new Error(`${c.label}: ${res.status} ${body.slice(0, 200)}`);
  }

  const figures = Object.fromEntries(cases.map((c) => [c.id, { rps: [], p50: [], p99: [] }]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of cases) {
      const out = await runLoad({ url: c.url, kind: "get", path: c.path, headers: { "cf-connecting-ip": "203.0.113.9" }, connections: CONNECTIONS, durationS: ROUND_S, label: c.id });
      const non2xx = Object.entries(out.status).filter(([s]) => !s.startsWith("2"));
      if (non2xx.length > 0) throw new Error(`${c.label}: answers other than 2xx: ${JSON.stringify(out.status)}`);
      figures[c.id].rps.push(out.requests_per_s);
      figures[c.id].p50.push(out.latency_2xx.p50_ms);
      figures[c.id].p99.push(out.latency_2xx.p99_ms);
      console.log(`round ${round + 1}/${ROUNDS} ${c.id}: ${out.requests_per_s}/s`);
    }
  }
  const row = (c) => {
    const f = figures[c.id];
    return `| ${c.label} | ${median(f.rps)} (${Math.min(...f.rps)}–${Math.max(...f.rps)}) | ${median(f.p50)} | ${median(f.p99)} |`;
  };
  console.log(`\n${ROUNDS} rounds of ${ROUND_S} s, ${CONNECTIONS} connections, closed loop; medians (range)\n`);
  console.log("| case | requests/s | p50 ms | p99 ms |\n| --- | --- | --- | --- |");
  for (const c of cases) console.log(row(c));
  const s = median(figures.s.rps);
  console.log(`\nTollgate → service ÷ Tollgate → URL: ${(s / median(figures.u.rps)).toFixed(2)}×; Tollgate → service ÷ bare → service: ${(s / median(figures.b.rps)).toFixed(2)}×`);
}

try {
  await main();
} finally {
  await cleanupAll();
}

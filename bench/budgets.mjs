// `npm run bench:budgets`: what a budget costs a request. One gateway, two
// tenants alike but for one thing: "budgeted" has a `request` budget
// (2^53 a month: it never refuses; each request spends from the isolate's
// lease of the budget, so only the lease's asks and reports reach its
// TenantQuota), "plain" has none (no Durable Object call). For scale, a third tenant's uploads on the quota
// route (two TenantQuota calls each: reserve, commit), the Durable Object
// path the main bench already measures. Interleaved closed-loop rounds, then
// the GETs at one fixed rate (below what one object serves on this
// machine) for latency. Prints the table and writes
// bench/results/budgets.json. `-- --quick` shortens it.
import { join } from "node:path";
import { UNLIMITED_TENANT, tollgateConfig } from "./lib/gateway-config.mjs";
import { admin, applyMigrations, seedTenantAndKey, startWorker, waitHealthy } from "./lib/instances.mjs";
import { startClient } from "./lib/client.mjs";
import { ROOT, runStandalone } from "./lib/standalone.mjs";
import { startOriginThread } from "./origin.mjs";

const SETTINGS = {
  full: { rounds: 3, durationS: 5, connections: 16, ratePerS: 30, latencyDurationS: 10 },
  quick: { rounds: 1, durationS: 2, connections: 8, ratePerS: 20, latencyDurationS: 3 },
};

async function benchBudgets({ bundle, compat, token, stateDir, quick, log }) {
  const settings = quick ? SETTINGS.quick : SETTINGS.full;
  const origin = await startOriginThread();
  const originUrl = `http://127.0.0.1:${origin.port}`;
  const gateway = await startWorker({
    name: "gateway-budgets",
    scriptPath: bundle,
    gateway: true,
    stateDir: join(stateDir, "budgets"),
    compat,
    bindings: { ORIGIN_URL: originUrl, ADMIN_TOKEN: token, TOLLGATE: tollgateConfig("enforce", { request_log: false }) },
  });
  await applyMigrations(ROOT, gateway);
  await waitHealthy(gateway.url);
  const plainKey = await seedTenantAndKey(gateway.url, token, "plain", UNLIMITED_TENANT, "no budget");
  const budgetedKey = await seedTenantAndKey(gateway.url, token, "budgeted", UNLIMITED_TENANT, "budgeted");
  await admin(gateway.url, token, "PUT", "/tenants/budgeted/budgets/request", { amount: 2 ** 53, period: "month" });
  const uploadKey = await seedTenantAndKey(gateway.url, token, "uploads", UNLIMITED_TENANT, "uploads");
  const targets = { plain: plainKey, budgeted: budgetedKey };
  const loads = {
    plain: { kind: "get", path: "/bench", headers: { authorization: `Bearer ${plainKey}` } },
    budgeted: { kind: "get", path: "/bench", headers: { authorization: `Bearer ${budgetedKey}` } },
    upload: { kind: "upload", bodyBytes: 256, headers: { authorization: `Bearer ${uploadKey}` } },
  };
  const client = startClient();
  const throughput = { plain: [], budgeted: [], upload: [] };
  for (let round = 0; round < settings.rounds; round++) {
    for (const [name, spec] of Object.entries(loads)) {
      const r = await client.run({ mode: "duration", url: gateway.url, ...spec, ...(name === "upload" ? { prefix: `r${round}` } : {}), connections: settings.connections, durationS: settings.durationS });
      log(`round ${round + 1}: ${name} ${r.requests_per_s}/s, statuses ${JSON.stringify(r.status)}`);
      throughput[name].push(r.requests_per_s);
    }
  }
  const latency = {};
  for (const [name, key] of Object.entries(targets)) {
    const r = await client.run({ mode: "rate", url: gateway.url, kind: "get", path: "/bench", headers: { authorization: `Bearer ${key}` }, ratePerS: settings.ratePerS, durationS: settings.latencyDurationS });
    latency[name] = { p50_ms: r.latency.p50_ms, p99_ms: r.latency.p99_ms, status: r.status };
  }
  await client.close();
  const used = (await admin(gateway.url, token, "GET", "/tenants/budgeted/budgets/request")).used;
  await gateway.stop();
  await origin.close?.();
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    settings,
    throughput_per_s: { plain: median(throughput.plain), budgeted: median(throughput.budgeted), upload: median(throughput.upload), rounds: throughput },
    ratio: Math.round((median(throughput.budgeted) / median(throughput.plain)) * 100) / 100,
    latency_at_fixed_rate: latency,
    budget_used: used,
  };
}

function summary(f) {
  return [
    "| target | throughput (median, req/s) | p50 at " + f.settings.ratePerS + "/s | p99 at " + f.settings.ratePerS + "/s |",
    "| --- | --- | --- | --- |",
    `| no budget (no Durable Object call) | ${f.throughput_per_s.plain} | ${f.latency_at_fixed_rate.plain.p50_ms} ms | ${f.latency_at_fixed_rate.plain.p99_ms} ms |`,
    `| a request budget (spent from the isolate's lease) | ${f.throughput_per_s.budgeted} | ${f.latency_at_fixed_rate.budgeted.p50_ms} ms | ${f.latency_at_fixed_rate.budgeted.p99_ms} ms |`,
    `| for scale: an upload with a quota (two TenantQuota calls) | ${f.throughput_per_s.upload} | – | – |`,
    "",
    `Budgeted throughput is ${f.ratio}× the unbudgeted; the budget counted ${f.budget_used} requests.`,
  ].join("\n");
}

await runStandalone({ title: "budgets", key: "budgets", run: benchBudgets, summary });

// node bench/held.mjs — what a request held by a limit's delay_max_ms costs:
// heap per held request (its Request, Exchange, the step's closure, its
// timer and promises) and CPU while requests are held. The rate-limit step is
// run alone (src/limits/rate-limit.ts with the real LimiterTable, timer and
// in-flight table) in Node under tsx: no workerd, no origin. A measurement,
// never a timed test.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

if (process.env.TOLLGATE_BENCH_CHILD !== "1") {
  const child = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, TOLLGATE_BENCH_CHILD: "1" },
  });
  process.exit(child.status ?? 1);
}

const { parseConfig } = await import("../src/config.ts");
const { Exchange } = await import("../src/context.ts");
const { LimiterTable } = await import("../src/engine/limiter-table.ts");
const { rateLimit } = await import("../src/limits/rate-limit.ts");
const { HeldRequests, timerSleep } = await import("../src/limits/delay.ts");
const { InFlightTable, inFlightBounds } = await import("../src/limits/in-flight.ts");

const N = Number(process.argv[2] ?? 10_000);
const parsed = parseConfig({
  limiter: { max_delayed: 100_000 },
  in_flight: { budget: 1_000_000, credential_share: 1, tenant_share: 1 },
  categories: { request: { limits: { ip: [{ count: 1, window_s: 10, delay_max_ms: 10_000 }] } } },
});
if (!parsed.ok) throw new Error(`${parsed.field}: ${parsed.message}`);
const config = parsed.config;
const table = new LimiterTable(16, { seed: 1 });
const held = new HeldRequests(config.limiterMaxDelayed);
const inFlight = new InFlightTable();
const step = rateLimit({
  table,
  leases: /** isolate limits only: never consulted */ null,
  now: Date.now,
  defaults: config.defaults,
  responseCharges: [],
  delay: { held, sleep: timerSleep, inFlight, bounds: inFlightBounds(config.inFlight) },
});
const runtime = { limiter: table, now: Date.now };

function exchange(i, signal) {
  const request = new Request(`http://gateway.test/items/${i}`, { headers: { "user-agent": "bench", accept: "*/*" }, signal });
  const x = new Exchange(request, {}, null, runtime, config, `/items/${i}`, "", null, Date.now());
  x.caller = { kind: "anonymous", callerKey: `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, override: null };
  return x;
}

function heapMiB() {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

// Each subject's first request is admitted; its second would wait 10 s: held.
for (let i = 0; i < N; i++) if (step(exchange(i, undefined)) !== null) throw new Error("the first request should be admitted");

const controllers = [];
const baseline = heapMiB();
const plain = [];
for (let i = 0; i < N; i++) {
  const controller = new AbortController();
  controllers.push(controller);
  plain.push(exchange(i, controller.signal));
}
const withExchanges = heapMiB();
const pending = plain.map((x) => step(x));
const notHeld = pending.map((p, i) => (p instanceof Promise ? -1 : i)).filter((i) => i >= 0);
if (notHeld.length > 0 || held.count !== N) throw new Error(`expected ${N} held, got ${held.count}`);
const withHeld = heapMiB();

const cpuBefore = process.cpuUsage();
const wallBefore = performance.now();
await new Promise((resolve) => setTimeout(resolve, 2000));
const cpu = process.cpuUsage(cpuBefore);
const wallMs = performance.now() - wallBefore;

const abortBefore = process.cpuUsage();
for (const controller of controllers) controller.abort();
const answers = await Promise.all(pending);
const abortCpu = process.cpuUsage(abortBefore);

const kib = (mib) => ((mib * 1024 * 1024) / N / 1024).toFixed(2);
console.log(`held requests: ${N} (node ${process.version})`);
console.log(`heap per request, Request + Exchange only: ${kib(withExchanges - baseline)} KiB`);
console.log(`heap per held request, on top of that (the hold: closure, timer, promises, abort listener): ${kib(withHeld - withExchanges)} KiB`);
console.log(`CPU while ${N} were held for ${wallMs.toFixed(0)} ms: ${((cpu.user + cpu.system) / 1000).toFixed(1)} ms`);
console.log(`CPU to end them all by client hang-up (give-back included): ${((abortCpu.user + abortCpu.system) / 1000).toFixed(1)} ms, ${(((abortCpu.user + abortCpu.system) / N)).toFixed(1)} µs each; answers: ${answers.filter((a) => a?.status === 429).length} × 429, held now ${held.count}`);

// npm run bench:engine — Tollgate's admit() side by side with `limiter`
// (TokenBucket, one per key in a Map) and `rate-limiter-flexible`
// (RateLimiterMemory), in one process, on the same key sets. Prints a Markdown
// table and writes the figures to bench/results/engine.json. A benchmark,
// never a timed test.
//
// - Every decision includes one clock read: Date.now() passed to admit(); the
//   TokenBucket reads performance.now() itself; RateLimiterMemory reads
//   Date.now() itself. RateLimiterMemory.consume is async, so it is awaited in
//   the loop, as a caller would.
// - The limits admit every decision (the path that writes state); a warning
//   is printed if any contender denied.
// - Subject strings are built before the clock starts, except in the
//   "rebuilt" cases. That favours the Map-based libraries: V8 keeps a string's
//   hash inside the string, so their lookups hash nothing, while admit()
//   hashes every subject other than the last two it saw.
// - Cycling visits 100k keys in a fixed shuffled order, after one pass in
//   creation order has given every contender state for every key. Whatever
//   order first creates a Map's entries and per-key objects lays them out in
//   memory in that order, so a warm-up in the measured order would hand the
//   Map-based libraries sequential memory access that real traffic (where
//   the order callers first arrive says nothing about the order they come
//   back) does not give them; the creation-order case shows that effect.
// - Each (case, contender) runs in its own generated loop so V8's type
//   feedback does not leak between them, and rounds interleave the
//   contenders so background load falls on all of them alike; the figure is
//   the median round.
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

// The engine is TypeScript: run this file again under tsx (and with gc exposed
// for the memory figures) unless that has already happened.
if (process.env.TOLLGATE_BENCH_CHILD !== "1") {
  const child = spawnSync(process.execPath, ["--expose-gc", "--import", "tsx", fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, TOLLGATE_BENCH_CHILD: "1" },
  });
  process.exit(child.status ?? 1);
}

const { admit } = await import("../src/engine/gcra.ts");
const { compileLimits } = await import("../src/engine/limit.ts");
const { LimiterTable } = await import("../src/engine/limiter-table.ts");

if (process.env.TOLLGATE_BENCH_RESIDENT === "1") {
  const limits = compileLimits([{ count: 10, window_s: 3600 }]);
  const subjects = Array.from({ length: 100_000 }, (_, i) => `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
  const charges = subjects.map((subject) => [{ subject, category: "request", limits, cost: 1 }]);
  const rss = () => {
    globalThis.gc();
    return process.memoryUsage().rss;
  };
  const rss0 = rss();
  const table = new LimiterTable(16);
  const rss1 = rss();
  const nowMs = Date.now();
  for (const c of charges) admit(table, c, nowMs);
  const rss2 = rss();
  console.log(JSON.stringify({ tableBytes: table.byteSize, rssAfterCreateBytes: rss1 - rss0, rssWith100kLiveBytes: rss2 - rss0, activeBytes: table.activeBytes, liveEntries: table.liveEntries(nowMs) }));
  process.exit(0);
}
const { compileNetBlocks } = await import("../src/engine/net-blocks.ts");
const { cidrSetHas, parseCidrs, parseIp } = await import("../src/engine/cidr.ts");
const { TokenBucket } = await import("limiter");
const { RateLimiterMemory } = await import("rate-limiter-flexible");

const ROUNDS = 7;
const ROUND_MS = 150;
const DISTINCT_KEYS = 100_000;
/** Hot key: roomy enough that every decision admits, and T fractional in admit() (10^-6 ms), the slower arithmetic path. */
const HOT_LIMIT = { count: 1_000_000_000, window_s: 1 };
/**
 * Cycling with live state: 1 per minute with a burst of 10^9. Every spend
 * moves a key's state a minute on, so every state stays live for the whole
 * run however slow a round is, and nothing is denied in years. (The built-in
 * 200,000 per hour, T = 18 ms, left a state live only when its key came back
 * within 18 ms: about half of them on a quiet machine, few under load.)
 */
const CYCLING_LIMIT = { count: 60, window_s: 3600, burst: 1_000_000_000 };
/** Memory: 10 per hour, so every state stays live for the whole measurement. */
const MEMORY_LIMIT = { count: 10, window_s: 3600 };

const flat = (s) => JSON.parse(JSON.stringify(s));
const hex64 = (i) => {
  let h = "";
  let x = (i + 1) * 2654435761;
  for (let k = 0; k < 8; k++) {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + k) >>> 0;
    h += x.toString(16).padStart(8, "0");
  }
  return h;
};
const KEY_SETS = {
  ip: (i) => `ip:10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
  key: (i) => `key:${hex64(i)}`,
};

const CREATION_ORDER = Int32Array.from({ length: DISTINCT_KEYS }, (_, i) => i);

function shuffled(n) {
  const order = Int32Array.from({ length: n }, (_, i) => i);
  let x = 0x9e3779b9;
  for (let i = n - 1; i > 0; i--) {
    x = (Math.imul(x ^ (x >>> 13), 0x5bd1e995) + i) >>> 0;
    const j = x % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
}

// ---------------------------------------------------------------- contenders
// Each (case, contender) gets its own generated loop, so V8's type feedback of
// one does not leak into another's; the libraries' own code is shared, as it
// would be in a process.
let loopId = 0;
const SUBJECT = {
  hot: "env.hot",
  fresh: "env.prefix + env.rest",
  cycle: "env.many[env.order[j]]",
  cycleFresh: "env.prefix + env.rests[env.order[j]]",
};
const BODY = {
  tollgate: "if (env.admit(env.table, [{ subject, category: 'request', limits: env.limits, cost: 1 }], Date.now()).allowed) a++;",
  limiter:
    "let b = env.buckets.get(subject); if (b === undefined) { b = new env.TokenBucket(env.bucketOptions); b.content = env.bucketOptions.bucketSize; env.buckets.set(subject, b); } if (b.tryRemoveTokens(1)) a++;",
  rateLimiterFlexible: "try { await env.limiter.consume(subject, 1); a++; } catch { /* a RateLimiterRes rejection: denied */ }",
};

function makeLoop(id, pattern, env) {
  const async = id === "rateLimiterFlexible";
  const src = `return ${async ? "async " : ""}function run_${id}_${loopId++}(n) {
    let a = 0; let j = env.j;
    for (let k = 0; k < n; k++) {
      const subject = ${SUBJECT[pattern]};
      ${BODY[id]}
      if (++j === env.n) j = 0;
    }
    env.j = j; env.allowed += a; env.decisions += n;
  }`;
  return new Function("env", src)(env);
}

function contenderEnv(id, limitSpec) {
  const env = { j: 0, n: 1, allowed: 0, decisions: 0 };
  if (id === "tollgate") Object.assign(env, { admit, table: new LimiterTable(16), limits: compileLimits([limitSpec]) });
  if (id === "limiter")
    Object.assign(env, { TokenBucket, buckets: new Map(), bucketOptions: { bucketSize: limitSpec.burst ?? limitSpec.count, tokensPerInterval: limitSpec.count, interval: limitSpec.window_s * 1000 } });
  // A fixed window of `points`: the burst, so that it never denies either.
  if (id === "rateLimiterFlexible") env.limiter = new RateLimiterMemory({ points: limitSpec.burst ?? limitSpec.count, duration: limitSpec.window_s });
  return env;
}

const CONTENDERS = ["tollgate", "limiter", "rateLimiterFlexible"];
const NAMES = { tollgate: "Tollgate admit()", limiter: "limiter TokenBucket", rateLimiterFlexible: "rate-limiter-flexible RateLimiterMemory" };

// ---------------------------------------------------------------- cases
const cases = [];
for (const [shape, make] of Object.entries(KEY_SETS)) {
  const hot = flat(make(7));
  const colon = hot.indexOf(":") + 1;
  const many = Array.from({ length: DISTINCT_KEYS }, (_, i) => flat(make(i)));
  const base = { hot, prefix: hot.slice(0, colon), rest: hot.slice(colon), many };
  cases.push({ name: `hot key (${shape}:…)`, pattern: "hot", limit: HOT_LIMIT, data: { ...base, n: 1 } });
  cases.push({ name: `hot key, subject string rebuilt per decision (${shape}:…)`, pattern: "fresh", limit: HOT_LIMIT, data: { ...base, n: 1 } });
  cases.push({ name: `100k distinct keys cycling, live state, shuffled order (${shape}:…)`, pattern: "cycle", limit: CYCLING_LIMIT, data: { ...base, order: shuffled(DISTINCT_KEYS), n: DISTINCT_KEYS } });
  // As a request builds it (`ip:${clientKey}`): a new string, whose hash no Map has cached.
  const rests = many.map((subject) => flat(subject.slice(colon)));
  cases.push({ name: `100k distinct keys cycling, live state, shuffled order, subject string rebuilt per decision (${shape}:…)`, pattern: "cycleFresh", limit: CYCLING_LIMIT, data: { ...base, rests, order: shuffled(DISTINCT_KEYS), n: DISTINCT_KEYS } });
}
{
  const many = Array.from({ length: DISTINCT_KEYS }, (_, i) => flat(KEY_SETS.ip(i)));
  cases.push({
    name: "100k distinct keys cycling, states earned back between spends, shuffled order (ip:…)",
    pattern: "cycle",
    limit: HOT_LIMIT,
    data: { many, order: shuffled(DISTINCT_KEYS), n: DISTINCT_KEYS },
  });
}
{
  const many = Array.from({ length: DISTINCT_KEYS }, (_, i) => flat(KEY_SETS.ip(i)));
  cases.push({
    name: "100k distinct keys cycling, live state, creation order (ip:…)",
    pattern: "cycle",
    limit: CYCLING_LIMIT,
    data: { many, order: Int32Array.from({ length: DISTINCT_KEYS }, (_, i) => i), n: DISTINCT_KEYS },
  });
  // The shuffled cycle again, but with every key's state first created in that same shuffled order (as this bench
  // did before): the Map's entries and TokenBuckets then lie in visiting order, while the subject strings do not.
  cases.push({
    name: "100k distinct keys cycling, live state, shuffled order, state created in that order (ip:…)",
    pattern: "cycle",
    limit: CYCLING_LIMIT,
    warmInVisitOrder: true,
    data: { many, order: shuffled(DISTINCT_KEYS), n: DISTINCT_KEYS },
  });
}

// ---------------------------------------------------------------- harness
function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timeNs(run, n) {
  const t0 = process.hrtime.bigint();
  await run(n);
  return Number(process.hrtime.bigint() - t0);
}

/** Calls per round so that a round takes about ROUND_MS. */
async function calibrate(run) {
  let n = 1000;
  for (;;) {
    const ms = (await timeNs(run, n)) / 1e6;
    if (ms > ROUND_MS / 4) return Math.max(1000, Math.round((n * ROUND_MS) / ms));
    n *= 4;
  }
}

const clockLoops = {
  dateNow: (n) => {
    let s = 0;
    for (let k = 0; k < n; k++) s += Date.now();
    return s;
  },
  performanceNow: (n) => {
    let s = 0;
    for (let k = 0; k < n; k++) s += performance.now();
    return s;
  },
};
const clockNs = {};
for (const [name, loop] of Object.entries(clockLoops)) {
  const n = await calibrate(loop);
  const samples = [];
  for (let r = 0; r < ROUNDS; r++) samples.push((await timeNs(loop, n)) / n);
  clockNs[name] = Math.round(median(samples) * 10) / 10;
}

const loadAtStart = os.loadavg()[0];
const results = [];
for (const c of cases) {
  const runs = {};
  for (const id of CONTENDERS) {
    const env = Object.assign(contenderEnv(id, c.limit), c.data, { j: 0 });
    const run = makeLoop(id, c.pattern, env);
    // Every key once before the clock starts, in creation order, so each contender holds state for all of them.
    const visit = env.order;
    if (visit !== undefined && c.warmInVisitOrder !== true) env.order = CREATION_ORDER;
    await run(c.data.n);
    env.order = visit;
    env.j = 0;
    runs[id] = { env, run, n: await calibrate(run), samples: [] };
  }
  // Rounds interleave the contenders, so a burst of background load hits all of them alike.
  for (let r = 0; r < ROUNDS; r++) {
    for (const id of CONTENDERS) runs[id].samples.push((await timeNs(runs[id].run, runs[id].n)) / runs[id].n);
  }
  const row = { case: c.name, limit: c.limit, ns: {}, decisionsPerS: {}, deniedDecisions: {} };
  for (const id of CONTENDERS) {
    const ns = median(runs[id].samples);
    row.ns[id] = Math.round(ns * 10) / 10;
    row.decisionsPerS[id] = Math.round(1e9 / ns);
    row.deniedDecisions[id] = runs[id].env.decisions - runs[id].env.allowed;
  }
  row.speedupVsRateLimiterMemory = Math.round((row.ns.rateLimiterFlexible / row.ns.tollgate) * 10) / 10;
  // TokenBucket ns ÷ Tollgate ns within each round (above 1: Tollgate is faster), so load that shifts between rounds cancels out.
  const ratios = runs.tollgate.samples.map((ns, r) => runs.limiter.samples[r] / ns).sort((a, b) => a - b);
  row.vsTokenBucketMap = { median: Math.round(median(ratios) * 100) / 100, lowest: Math.round(ratios[0] * 100) / 100, highest: Math.round(ratios[ratios.length - 1] * 100) / 100 };
  const table = runs.tollgate.env.table;
  row.tollgateTable = { activeBytes: table.activeBytes, liveEntries: table.liveEntries(Date.now()) };
  results.push(row);
  process.stderr.write(`  measured: ${c.name}\n`);
}
const loadAtEnd = os.loadavg()[0];

// ---------------------------------------------------------------- memory per live entry
function heapBytes() {
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

// Heap growth while 100k distinct ip callers each get one decision under
// MEMORY_LIMIT (so every state stays live). The contender is built first, so
// Tollgate's preallocated table is not growth: it is reported by its size.
async function growthPerEntry(id) {
  const env = Object.assign(contenderEnv(id, MEMORY_LIMIT), { j: 0, n: DISTINCT_KEYS, many: null, order: null });
  const run = makeLoop(id, "cycle", env);
  const before = heapBytes();
  env.many = Array.from({ length: DISTINCT_KEYS }, (_, i) => KEY_SETS.ip(i));
  env.order = Int32Array.from({ length: DISTINCT_KEYS }, (_, i) => i);
  await run(DISTINCT_KEYS);
  env.many = null; // the caller's own strings are not limiter state; a Map's retained keys are
  env.order = null;
  const after = heapBytes();
  const live = id === "tollgate" ? env.table.liveEntries(Date.now()) : id === "limiter" ? env.buckets.size : env.limiter._memoryStorage._storage.size;
  const m = { liveEntries: live, heapGrowthBytes: after - before, bytesPerLiveEntry: Math.round((after - before) / live) };
  // The heap's growth means nothing here: earlier cases' 16 MiB tables are freed in the background meanwhile.
  if (id === "tollgate") Object.assign(m, { heapGrowthBytes: null, tableBytes: env.table.byteSize, activeBytes: env.table.activeBytes, slots: env.table.slotCount, bytesPerLiveEntry: env.table.byteSize / env.table.slotCount });
  return m;
}

const memory = {};
for (const id of CONTENDERS) memory[id] = await growthPerEntry(id);
// At capacity: a 16 MiB table offered 1M live callers keeps as many as its sets can hold.
{
  const table = new LimiterTable(16);
  const limits = compileLimits([MEMORY_LIMIT]);
  const nowMs = Date.now();
  for (let i = 0; i < 1_000_000; i++) admit(table, [{ subject: `ip:${i}`, category: "request", limits, cost: 1 }], nowMs);
  const live = table.liveEntries(nowMs);
  memory.tollgateAtCapacity = { offered: 1_000_000, liveEntries: live, tableBytes: table.byteSize, bytesPerLiveEntry: Math.round((table.byteSize / live) * 10) / 10 };
}

// Resident memory, in a fresh process (this one's heap comes and goes): the
// 16 MiB buffer is reserved at once, but the OS backs a page only when it is
// first written, so a table holds about its active region in RAM.
{
  // A 1 MiB young generation, so that the garbage of 100k decisions does not grow the heap's share of RSS by 16 MiB.
  const child = spawnSync(process.execPath, ["--expose-gc", "--max-semi-space-size=1", "--import", "tsx", fileURLToPath(import.meta.url)], {
    env: { ...process.env, TOLLGATE_BENCH_CHILD: "1", TOLLGATE_BENCH_RESIDENT: "1" },
    encoding: "utf8",
  });
  memory.tollgateResident = JSON.parse(child.stdout);
}

// ---------------------------------------------------------------- network blocks
// 10,000 `net:` blocks, half IPv4 (/16 to /32) and half IPv6 (/32 to /128 in
// 2000::/3), looked up with addresses parsed beforehand (the request path
// parses the client address once anyway): hits fall inside a random block,
// misses inside none. The linear scan (cidrSetHas over the same blocks) is
// what a list without an index would cost.
const NET_BLOCKS = 10_000;
const netBlocks = await (async () => {
  let seed = 0x2545f491;
  const next = () => (seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0);
  const v4Text = (v) => [24, 16, 8, 0].map((s) => (v >>> s) & 255).join(".");
  const v6Text = (w) => w.flatMap((x) => [x >>> 16, x & 0xffff]).map((g) => g.toString(16)).join(":");
  const entries = [];
  const inside = [];
  for (let i = 0; i < NET_BLOCKS; i++) {
    if (i % 2 === 0) {
      const prefix = 16 + (next() % 17);
      const net = next();
      entries.push({ id: `block-${i}`, cidr: `${v4Text(net)}/${prefix}` });
      inside.push(() => v4Text(prefix === 32 ? net : ((net >>> (32 - prefix)) << (32 - prefix)) + (next() % 2 ** (32 - prefix)) >>> 0));
    } else {
      const prefix = 32 + (next() % 97);
      const w = [((next() & 0x1fffffff) | 0x20000000) >>> 0, next(), next(), next()];
      entries.push({ id: `block-${i}`, cidr: `${v6Text(w)}/${prefix}` });
      inside.push(() => v6Text(w)); // the network's own address bits with the host bits as drawn: inside the block
    }
  }
  const t0 = process.hrtime.bigint();
  const matcher = compileNetBlocks(entries);
  const compileMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const linear = parseCidrs(entries.map((e) => e.cidr));
  if (!linear.ok || matcher.size !== NET_BLOCKS) throw new Error("bench blocks did not compile");
  const sets = { v4Hit: [], v4Miss: [], v6Hit: [], v6Miss: [] };
  while (sets.v4Hit.length < 4096 || sets.v6Hit.length < 4096) {
    const i = next() % NET_BLOCKS;
    const addr = parseIp(inside[i]());
    const set = i % 2 === 0 ? sets.v4Hit : sets.v6Hit;
    if (matcher.match(addr) !== null && set.length < 4096) set.push(addr);
  }
  while (sets.v4Miss.length < 4096 || sets.v6Miss.length < 4096) {
    const v4 = parseIp(v4Text(next()));
    const v6 = parseIp(v6Text([((next() & 0x1fffffff) | 0x20000000) >>> 0, next(), next(), next()]));
    if (matcher.match(v4) === null && sets.v4Miss.length < 4096) sets.v4Miss.push(v4);
    if (matcher.match(v6) === null && sets.v6Miss.length < 4096) sets.v6Miss.push(v6);
  }
  const loops = {};
  for (const [name, addrs] of Object.entries(sets)) {
    loops[name] = new Function("m", "addrs", `return function lookup_${name}(n) { let hits = 0; for (let k = 0; k < n; k++) if (m.match(addrs[k & 4095]) !== null) hits++; return hits; }`)(matcher, addrs);
  }
  loops.linearScanV4 = (n) => {
    let hits = 0;
    for (let k = 0; k < n; k++) if (cidrSetHas(linear.set, sets.v4Miss[k & 4095])) hits++;
    return hits;
  };
  const runs = Object.fromEntries(await Promise.all(Object.entries(loops).map(async ([name, run]) => [name, { run, n: await calibrate(run), samples: [] }])));
  for (let r = 0; r < ROUNDS; r++) for (const entry of Object.values(runs)) entry.samples.push((await timeNs(entry.run, entry.n)) / entry.n);
  const ns = Object.fromEntries(Object.entries(runs).map(([name, entry]) => [name, Math.round(median(entry.samples) * 10) / 10]));
  return { blocks: NET_BLOCKS, compileMs: Math.round(compileMs * 10) / 10, ns };
})();
process.stderr.write("  measured: network blocks\n");

// ---------------------------------------------------------------- report
const fmtNs = (ns) => `${ns.toFixed(1)} ns`;
const fmtRate = (r) => `${(r / 1e6).toFixed(2)} M/s`;
const lines = [];
lines.push(
  `Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "CPU"}; load average ${loadAtStart.toFixed(2)} → ${loadAtEnd.toFixed(2)}; clock read alone: Date.now() ${fmtNs(clockNs.dateNow)}, performance.now() ${fmtNs(clockNs.performanceNow)}`,
);
lines.push("");
lines.push("| case | Tollgate admit() | limiter TokenBucket | rate-limiter-flexible RateLimiterMemory | Tollgate vs TokenBucket (per-round range) | Tollgate vs RateLimiterMemory |");
lines.push("| --- | ---: | ---: | ---: | ---: | ---: |");
for (const r of results) {
  const cell = (id) => `${fmtNs(r.ns[id])} (${fmtRate(r.decisionsPerS[id])})`;
  const v = r.vsTokenBucketMap;
  lines.push(`| ${r.case} | ${cell("tollgate")} | ${cell("limiter")} | ${cell("rateLimiterFlexible")} | ${v.median}× (${v.lowest}–${v.highest}) | ${r.speedupVsRateLimiterMemory}× |`);
}
lines.push("");
lines.push("Tollgate's table after each case (active region, live states):");
for (const r of results) lines.push(`- ${r.case}: ${(r.tollgateTable.activeBytes / 2 ** 20).toFixed(2)} MiB active, ${r.tollgateTable.liveEntries} live`);
lines.push("");
lines.push("| state per live (subject, limit) entry, key included | Tollgate | limiter TokenBucket (in a Map) | RateLimiterMemory |");
lines.push("| --- | ---: | ---: | ---: |");
const tg = memory.tollgate;
const full = memory.tollgateAtCapacity;
lines.push(
  `| bytes, ${DISTINCT_KEYS / 1000}k ip callers live | ${tg.bytesPerLiveEntry} per slot: fixed ${tg.tableBytes / 2 ** 20} MiB = ${tg.slots} slots (${tg.activeBytes / 2 ** 20} MiB active, ${tg.liveEntries} live) | ${memory.limiter.bytesPerLiveEntry} | ${memory.rateLimiterFlexible.bytesPerLiveEntry} |`,
);
lines.push(`| bytes, table at capacity (1M callers offered) | ${full.bytesPerLiveEntry} (${full.liveEntries} kept live) | grows without bound | grows without bound |`);
const res = memory.tollgateResident;
lines.push(
  `| resident memory (RSS growth of a fresh process, the collector's share included) | 16 MiB table: +${(res.rssAfterCreateBytes / 2 ** 20).toFixed(1)} MiB when created, +${(res.rssWith100kLiveBytes / 2 ** 20).toFixed(1)} MiB with ${res.liveEntries} live (${(res.activeBytes / 2 ** 20).toFixed(1)} MiB active) | – | – |`,
);
lines.push("");
lines.push(`| network blocks (${NET_BLOCKS.toLocaleString("en")}: half IPv4, half IPv6; compiled in ${netBlocks.compileMs} ms) | ns per lookup |`);
lines.push("| --- | ---: |");
for (const [name, label] of [["v4Hit", "IPv4, inside a block"], ["v4Miss", "IPv4, inside none"], ["v6Hit", "IPv6, inside a block"], ["v6Miss", "IPv6, inside none"], ["linearScanV4", "IPv4, inside none, linear scan (cidrSetHas)"]]) {
  lines.push(`| ${label} | ${fmtNs(netBlocks.ns[name])} |`);
}
console.log(lines.join("\n"));

const denied = results.flatMap((r) => Object.entries(r.deniedDecisions).filter(([, d]) => d > 0).map(([id, d]) => `${r.case}: ${id} denied ${d}`));
if (denied.length > 0) console.warn(`warning: the limits were meant to admit everything, but: ${denied.join("; ")}`);

const out = join(here, "results", "engine.json");
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      measuredAt: new Date().toISOString(),
      machine: { node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, platform: `${os.platform()} ${os.arch()}` },
      method: { rounds: ROUNDS, roundMs: ROUND_MS, statistic: "median over interleaved rounds of ns per decision, clock read included", hotLimit: HOT_LIMIT, cyclingLimit: CYCLING_LIMIT, memoryLimit: MEMORY_LIMIT },
      loadAverage: { start: loadAtStart, end: loadAtEnd },
      clockNs,
      cases: results,
      memory,
      netBlocks,
    },
    null,
    2,
  )}\n`,
);
console.log(`\nwrote ${out}`);

// `npm run bench:traffic`: what counting a request in the traffic rollups
// costs, per request, in V8 (Node's, the engine workerd embeds): the code
// the gateway runs at each request's end with traffic.enabled (TrafficCounts.count,
// from src/engine/traffic-counts.ts), for an admitted request and for a
// refused one (which also feeds the heavy-hitter sketch), against the same
// loop with counting off. Tenants and callers cycle through realistic sets
// (200 tenants; refused callers: 50 hot ones and a long tail). Each case runs
// in rounds; the figure is the median ns per request, with the range.
import { tsImport } from "tsx/esm/api";

const { TrafficCounts } = await tsImport("../src/engine/traffic-counts.ts", import.meta.url);

const N = 2_000_000;
const ROUNDS = 7;
const tenants = Array.from({ length: 200 }, (_, i) => `tenant-${i}`);
const callers = Array.from({ length: 5000 }, (_, i) => (i < 50 ? `key:hot${i}` : `ip:10.0.${i >> 8}.${i & 255}`));
const decisions = ["rate_limited", "blocked", "invalid_credential"];

function run(kind) {
  const counts = new TrafficCounts({ maxMinutes: 120, maxCells: 5000, sketchCapacity: 64 });
  let nowMs = 1_800_000_000_000;
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    nowMs += 0.03; // ~33 requests per ms: every minute gets 2M/… requests, and minutes roll over
    const tenant = tenants[i % 200];
    if (kind === "off") {
      sink += tenant.length;
    } else if (kind === "admitted") {
      counts.count(nowMs, tenant, "admitted", null);
    } else {
      // A refused caller: 60 % from the 50 hot ones, the rest from the tail.
      const caller = i % 5 < 3 ? callers[i % 50] : callers[50 + ((i * 7919) % 4950)];
      counts.count(nowMs, tenant, decisions[i % 3], caller);
    }
    if (counts.pendingMinutes > 100) counts.take();
  }
  const ns = Number(process.hrtime.bigint() - start) / N;
  if (sink < 0) console.log(sink);
  return ns;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const results = {};
for (const kind of ["off", "admitted", "refused"]) run(kind); // warm up
for (let r = 0; r < ROUNDS; r++) for (const kind of ["off", "admitted", "refused"]) (results[kind] ??= []).push(run(kind));
const off = median(results.off);
console.log(`${ROUNDS} rounds of ${N.toLocaleString("en")} requests; ns per request, median (range)\n`);
console.log("| case | ns per request | over counting off |\n| --- | --- | --- |");
for (const kind of ["off", "admitted", "refused"]) {
  const m = median(results[kind]);
  console.log(`| ${kind === "off" ? "counting off (the loop alone)" : `counting on, ${kind}`} | ${m.toFixed(1)} (${Math.min(...results[kind]).toFixed(1)}–${Math.max(...results[kind]).toFixed(1)}) | ${kind === "off" ? "–" : `+${(m - off).toFixed(1)} ns`} |`);
}

// An open-loop load over several gateway copies, on its own thread, for the
// global-limits bench (bench/lib/global-bench.mjs): request i is due at a
// Poisson arrival time at `ratePerS` (or evenly spaced), goes to a copy
// chosen at random, and is sent then whether or not earlier ones have
// answered; its latency counts from when it was due. Bounded by durationS.
// Posts back one summary: status counts and latencies (ms) of the answers.
import { Agent, request } from "node:http";
import { parentPort, workerData } from "node:worker_threads";

const spec = workerData;
const targets = spec.targets.map((u) => new URL(u));
const agents = targets.map(() => new Agent({ keepAlive: true, maxSockets: 64 }));

// A seeded PRNG (mulberry32), so a run's arrival pattern can be replayed.
let seed = spec.seed >>> 0;
function random() {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const due = [];
for (let at = 0; at < spec.durationS * 1000; ) {
  due.push(at);
  at += spec.poisson ? -Math.log(1 - random()) * (1000 / spec.ratePerS) : 1000 / spec.ratePerS;
}
const latencies = [];
const byStatus = {};
let errors = 0;
let settled = 0;
const start = performance.now();

function send(i) {
  const target = Math.floor(random() * targets.length);
  const url = targets[target];
  const dueAt = start + due[i];
  const req = request(
    { host: url.hostname, port: url.port, path: spec.path, method: "GET", agent: agents[target], headers: spec.headers },
    (res) => {
      res.resume();
      res.on("end", () => {
        latencies.push(performance.now() - dueAt);
        byStatus[res.statusCode] = (byStatus[res.statusCode] ?? 0) + 1;
        done();
      });
      res.on("error", () => {
        errors++;
        done();
      });
    },
  );
  req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
  req.on("error", () => {
    errors++;
    done();
  });
  req.end();
}

function done() {
  settled++;
  if (settled < due.length) return;
  for (const agent of agents) agent.destroy();
  parentPort.postMessage({ sent: due.length, byStatus, errors, latencies, elapsedS: (performance.now() - start) / 1000 });
}

let next = 0;
function tick() {
  const now = performance.now() - start;
  while (next < due.length && due[next] <= now) send(next++);
  if (next < due.length) setTimeout(tick, Math.max(0, Math.min(5, due[next] - now)));
}
if (due.length === 0) parentPort.postMessage({ sent: 0, byStatus, errors, latencies, elapsedS: 0 });
else tick();

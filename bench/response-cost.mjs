// node bench/response-cost.mjs [--no-workerd] — what reading a response's
// cost costs (issue 15), in two parts. Prints Markdown tables and writes
// bench/results/response-cost.json. A benchmark, never a timed test.
//
// 1. In Node: a 100 KB OpenAI-style SSE stream, and a 100 KB JSON answer,
//    through the scanners alone and through tapCost() against the same
//    stream read untouched.
// 2. In workerd (Miniflare, as bench/run.mjs runs Workers): a minimal Worker
//    that fetches the 100 KB SSE stream from a local origin and returns it,
//    either as is (`new Response(origin.body, origin)`, the native pipe the
//    gateway's forward uses) or through tapCost(); the figure is the CPU
//    time of workerd's isolate thread per request (lib/thread-cpu.mjs), the
//    issue's "gateway CPU with cost extraction against without it" without
//    the rest of the gateway. The origin writes each event on its own
//    ("paced", as an LLM API streams) or all at once ("burst").
//
// - CPU time (process.cpuUsage, user + system) over a batch of streams, so
//   time the process spends waiting for a core the other jobs hold is not
//   counted; the figure is the median batch of interleaved rounds.
// - Two chunkings: one event per chunk (how an LLM API writes, ~370
//   chunks per stream: the per-chunk cost dominates) and 16 KiB chunks (a
//   fast origin, or TCP coalescing: the per-byte cost dominates).
// - "Untouched" reads the origin stream directly; "tapped" reads the
//   client's branch of tapCost() over the same origin stream while the tap
//   reads the other: the difference is the tap's own cost (the tee, the
//   second branch's reads, the scanner). In Node every branch is JavaScript;
//   in workerd the client's branch of a fetch body stays native, which is
//   why part 2 measures there.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isolateThread, threadCpu } from "./lib/thread-cpu.mjs";

const here = dirname(fileURLToPath(import.meta.url));

// The modules are TypeScript: run this file again under tsx unless that has already happened.
if (process.env.TOLLGATE_BENCH_CHILD !== "1") {
  const child = spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: "inherit",
    env: { ...process.env, TOLLGATE_BENCH_CHILD: "1" },
  });
  process.exit(child.status ?? 1);
}

const { compileJsonPath } = await import("../src/proxy/json-path.ts");
const { JsonPathScanner } = await import("../src/proxy/json-path-scanner.ts");
const { SseCostScanner } = await import("../src/proxy/sse-scanner.ts");
const { tapCost, MAX_JSON_INSPECT_BYTES } = await import("../src/proxy/response-cost.ts");

const ROUNDS = 9;
const ROUND_MS = 200;
const STREAM_BYTES = 100_000;
/** Gateway CPU per request at saturation in docs/performance.md: 1 / 3,190 requests per second. */
const GATEWAY_US_PER_REQUEST = 1e6 / 3190;

const encoder = new TextEncoder();
const path = compileJsonPath("usage.total_tokens");

// ---------------------------------------------------------------- bodies
function sseEvents() {
  const events = [];
  let total = 0;
  for (let i = 0; total < STREAM_BYTES - 300; i++) {
    // Varied content with the escapes real completions carry (\n, \"), no \u.
    const content = JSON.stringify(`${["Hello", " world", "!\n\n", ' "quoted"', " and", " more", " text"][i % 7]} ${i}`);
    const event = `data: {"id":"chatcmpl-9AbCdEfGhIj","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":${content}},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`;
    events.push(encoder.encode(event));
    total += event.length;
  }
  events.push(encoder.encode('data: {"id":"chatcmpl-9AbCdEfGhIj","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":371,"total_tokens":391}}\n\n'));
  events.push(encoder.encode("data: [DONE]\n\n"));
  return events;
}

function inPieces(whole, size) {
  const pieces = [];
  for (let at = 0; at < whole.length; at += size) pieces.push(whole.subarray(at, at + size));
  return pieces;
}

function concat(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

const perEvent = sseEvents();
const sseWhole = concat(perEvent);
const sse16k = inPieces(sseWhole, 16 * 1024);
const jsonWhole = (() => {
  const choices = [];
  for (let i = 0; JSON.stringify(choices).length < STREAM_BYTES - 300; i++) {
    choices.push({ index: i, message: { role: "assistant", content: `Some generated text, "quoted", with\nnewlines ${i}.` }, logprobs: null, finish_reason: "stop" });
  }
  return encoder.encode(JSON.stringify({ id: "chatcmpl-1", object: "chat.completion", choices, usage: { prompt_tokens: 20, completion_tokens: 2000, total_tokens: 2020 } }));
})();
const json16k = inPieces(jsonWhole, 16 * 1024);

// ---------------------------------------------------------------- cases
// A byte stream, as a fetch body is, so the tap reads its branch the way it does in workerd (into a buffer of its own).
function originOf(chunks) {
  let i = 0;
  return new ReadableStream(
    {
      type: "bytes",
      pull(controller) {
        // Enqueueing takes the buffer over: hand over a copy (untouched and tapped alike).
        if (i === chunks.length) controller.close();
        else controller.enqueue(chunks[i++].slice());
      },
    },
    { highWaterMark: 0 },
  );
}

async function drain(stream) {
  const reader = stream.getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    bytes += value.length;
  }
}

function checkCost(result, expected) {
  if (!result.found || result.cost !== expected) throw new Error(`expected cost ${expected}, got ${JSON.stringify(result)}`);
}

const cases = [];
for (const [chunking, chunks] of [
  ["one event per chunk", perEvent],
  ["16 KiB chunks", sse16k],
]) {
  cases.push({
    name: `SSE, ${chunking}: scanner alone`,
    group: `sse ${chunking}`,
    role: "scanner",
    chunks: chunks.length,
    bytes: sseWhole.length,
    run: async () => {
      const scanner = new SseCostScanner(path);
      for (const chunk of chunks) scanner.push(chunk);
      checkCost(scanner.end(), 391);
    },
  });
  cases.push({ name: `SSE, ${chunking}: stream read untouched`, group: `sse ${chunking}`, role: "untouched", chunks: chunks.length, bytes: sseWhole.length, run: () => drain(originOf(chunks)) });
  cases.push({
    name: `SSE, ${chunking}: stream read through tapCost`,
    group: `sse ${chunking}`,
    role: "tapped",
    chunks: chunks.length,
    bytes: sseWhole.length,
    run: async () => {
      const tapped = tapCost(originOf(chunks), path, "text/event-stream");
      await drain(tapped.body);
      checkCost(await tapped.cost, 391);
    },
  });
}
cases.push({
  name: "JSON, 16 KiB chunks: scanner alone",
  group: "json",
  role: "scanner",
  chunks: json16k.length,
  bytes: jsonWhole.length,
  run: async () => {
    const scanner = new JsonPathScanner(path, MAX_JSON_INSPECT_BYTES);
    for (const chunk of json16k) scanner.push(chunk, 0, chunk.length);
    if (scanner.finish() !== 0 || scanner.cost !== 2020) throw new Error("JSON cost not found");
  },
});
cases.push({ name: "JSON, 16 KiB chunks: stream read untouched", group: "json", role: "untouched", chunks: json16k.length, bytes: jsonWhole.length, run: () => drain(originOf(json16k)) });
cases.push({
  name: "JSON, 16 KiB chunks: stream read through tapCost",
  group: "json",
  role: "tapped",
  chunks: json16k.length,
  bytes: jsonWhole.length,
  run: async () => {
    const tapped = tapCost(originOf(json16k), path, "application/json");
    await drain(tapped.body);
    checkCost(await tapped.cost, 2020);
  },
});

// ---------------------------------------------------------------- harness
function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function cpuNsPer(run, n) {
  const before = process.cpuUsage();
  for (let k = 0; k < n; k++) await run();
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / n;
}

async function calibrate(run) {
  let n = 4;
  for (;;) {
    const t0 = performance.now();
    for (let k = 0; k < n; k++) await run();
    const ms = performance.now() - t0;
    if (ms > ROUND_MS / 4) return Math.max(4, Math.round((n * ROUND_MS) / ms));
    n *= 2;
  }
}

const loadAtStart = os.loadavg()[0];
for (const c of cases) {
  for (let k = 0; k < 50; k++) await c.run(); // warm up, and check every cost once
  c.n = await calibrate(c.run);
  c.samples = [];
}
for (let r = 0; r < ROUNDS; r++) for (const c of cases) c.samples.push(await cpuNsPer(c.run, c.n));
const loadAtEnd = os.loadavg()[0];

const results = cases.map((c) => {
  const ns = median(c.samples);
  return { name: c.name, group: c.group, role: c.role, chunks: c.chunks, bytes: c.bytes, usPerStream: ns / 1000, nsPerKiB: ns / (c.bytes / 1024) };
});
const groups = {};
for (const r of results) (groups[r.group] ??= {})[r.role] = r;
const overheads = Object.entries(groups).map(([group, g]) => {
  const tapUs = g.tapped.usPerStream - g.untouched.usPerStream;
  return {
    group,
    bytes: g.tapped.bytes,
    chunks: g.tapped.chunks,
    untouchedUs: g.untouched.usPerStream,
    tappedUs: g.tapped.usPerStream,
    tapOwnUs: tapUs,
    tapOwnNsPerKiB: (tapUs * 1000) / (g.tapped.bytes / 1024),
    tapOwnNsPerChunk: (tapUs * 1000) / g.tapped.chunks,
    scannerUs: g.scanner.usPerStream,
    scannerNsPerKiB: g.scanner.nsPerKiB,
    tapVsGatewayRequestPercent: (100 * tapUs) / GATEWAY_US_PER_REQUEST,
  };
});

// ---------------------------------------------------------------- workerd
const WORKERD_ROUNDS = 7;
const WORKERD_BATCH = 300;
const WORKER_SOURCE = `
import { compileJsonPath } from "../src/proxy/json-path.ts";
import { tapCost } from "../src/proxy/response-cost.ts";
const path = compileJsonPath("usage.total_tokens");
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const origin = await fetch(env.ORIGIN_URL + url.pathname);
    if (url.searchParams.get("tap") !== "1") return new Response(origin.body, origin);
    const tapped = tapCost(origin.body, path, origin.headers.get("content-type"));
    ctx.waitUntil(tapped.cost.then((cost) => {
      if (!cost.found || cost.cost !== 391) console.error("cost not found: " + JSON.stringify(cost));
    }));
    return new Response(tapped.body, origin);
  },
};
`;

/** CPU time of workerd's isolate thread, in ns (V8's helper threads left out, as bench/run.mjs reads it). */
function isolateCpuNs(pid) {
  return threadCpu(pid, isolateThread(pid)).ns;
}

async function workerdPart() {
  const { startWorker, readCompatibility } = await import("./lib/instances.mjs");
  const { cleanupAll, onCleanup } = await import("./lib/cleanup.mjs");
  const esbuild = await import("esbuild");
  const dir = mkdtempSync(join(os.tmpdir(), "tollgate-cost-bench-"));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  try {
    const scriptPath = join(dir, "worker.js");
    await esbuild.build({ stdin: { contents: WORKER_SOURCE, resolveDir: here, sourcefile: "cost-worker.js" }, bundle: true, format: "esm", platform: "neutral", target: "es2022", outfile: scriptPath, logLevel: "error" });
    const origin = createServer(async (req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "content-length": String(sseWhole.length) });
      if (req.url === "/burst") {
        res.end(sseWhole);
        return;
      }
      for (const event of perEvent) {
        res.write(event);
        await new Promise((resolve) => setImmediate(resolve));
      }
      res.end();
    });
    await new Promise((resolve) => origin.listen(0, "127.0.0.1", resolve));
    onCleanup(() => new Promise((resolve) => origin.close(() => resolve())));
    const originUrl = `http://127.0.0.1:${origin.address().port}`;
    const worker = await startWorker({ name: "cost-tap", scriptPath, bindings: { ORIGIN_URL: originUrl }, compat: readCompatibility(join(here, "..")), extra: { modulesRoot: dir } });
    if (worker.pid === null) throw new Error("could not find the workerd process");
    const one = async (pacing, tap) => {
      const res = await fetch(`${worker.url}/${pacing}${tap ? "?tap=1" : ""}`);
      const body = new Uint8Array(await res.arrayBuffer());
      if (body.length !== sseWhole.length) throw new Error(`got ${body.length} bytes, not ${sseWhole.length}`);
    };
    const combos = [];
    for (const pacing of ["paced", "burst"]) for (const tap of [false, true]) combos.push({ pacing, tap, samples: [] });
    for (const c of combos) for (let k = 0; k < 100; k++) await one(c.pacing, c.tap);
    for (let r = 0; r < WORKERD_ROUNDS; r++) {
      for (const c of combos) {
        const before = isolateCpuNs(worker.pid);
        for (let k = 0; k < WORKERD_BATCH; k++) await one(c.pacing, c.tap);
        c.samples.push((isolateCpuNs(worker.pid) - before) / WORKERD_BATCH);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const complaints = worker.stderrTail.join("").split("\n").filter((l) => l.includes("cost not found"));
    if (complaints.length > 0) throw new Error(`the tap missed the cost: ${complaints[0]}`);
    return ["paced", "burst"].map((pacing) => {
      const pass = combos.find((c) => c.pacing === pacing && !c.tap).samples;
      const tapped = combos.find((c) => c.pacing === pacing && c.tap).samples;
      // Each round's ratio, from batches run back to back, is steadier than a ratio of medians when the machine is shared.
      const ratios = pass.map((p, i) => tapped[i] / p);
      const passUs = median(pass) / 1000;
      const tappedUs = median(tapped) / 1000;
      return {
        pacing,
        passUs,
        tappedUs,
        addedUs: tappedUs - passUs,
        addedNsPerKiB: ((tappedUs - passUs) * 1000) / (sseWhole.length / 1024),
        addedPercentMedianRound: 100 * (median(ratios) - 1),
        addedPercentRange: [100 * (Math.min(...ratios) - 1), 100 * (Math.max(...ratios) - 1)],
        addedVsGatewayPercent: (100 * (tappedUs - passUs)) / (passUs + GATEWAY_US_PER_REQUEST),
      };
    });
  } finally {
    await cleanupAll();
  }
}

const workerd = process.argv.includes("--no-workerd") ? null : await workerdPart();

// ---------------------------------------------------------------- report
const f1 = (x) => x.toFixed(1);
const lines = [];
lines.push(`Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "CPU"}; load average ${loadAtStart.toFixed(2)} → ${loadAtEnd.toFixed(2)}; CPU time, median of ${ROUNDS} interleaved rounds`);
lines.push("");
lines.push("| case | chunks | µs CPU per stream | ns per KiB |");
lines.push("| --- | ---: | ---: | ---: |");
for (const r of results) lines.push(`| ${r.name} (${(r.bytes / 1000).toFixed(1)} KB) | ${r.chunks} | ${f1(r.usPerStream)} | ${f1(r.nsPerKiB)} |`);
lines.push("");
lines.push("| body | tap's own cost per stream (tapped − untouched) | per KiB | per chunk | scanner alone | vs the gateway's ~313 µs per request |");
lines.push("| --- | ---: | ---: | ---: | ---: | ---: |");
for (const o of overheads) {
  lines.push(`| ${o.group} | ${f1(o.tapOwnUs)} µs | ${f1(o.tapOwnNsPerKiB)} ns | ${f1(o.tapOwnNsPerChunk)} ns | ${f1(o.scannerUs)} µs (${f1(o.scannerNsPerKiB)} ns/KiB) | ${f1(o.tapVsGatewayRequestPercent)} % |`);
}
if (workerd !== null) {
  lines.push("");
  lines.push(`In workerd, 100 KB SSE per request, ${WORKERD_BATCH} requests per batch, median of ${WORKERD_ROUNDS} interleaved batches:`);
  lines.push("");
  lines.push("| origin writes | workerd CPU per request, passed through | through tapCost | added | added per KiB | added, median round (range) | added vs pass-through + Tollgate's ~313 µs |");
  lines.push("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const w of workerd) {
    lines.push(
      `| ${w.pacing === "paced" ? "one event at a time" : "all at once"} | ${f1(w.passUs)} µs | ${f1(w.tappedUs)} µs | ${f1(w.addedUs)} µs | ${f1(w.addedNsPerKiB)} ns | ${f1(w.addedPercentMedianRound)} % (${f1(w.addedPercentRange[0])} to ${f1(w.addedPercentRange[1])}) | ${f1(w.addedVsGatewayPercent)} % |`,
    );
  }
}
console.log(lines.join("\n"));

const out = join(here, "results", "response-cost.json");
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      measuredAt: new Date().toISOString(),
      machine: { node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? null, platform: `${os.platform()} ${os.arch()}` },
      method: { rounds: ROUNDS, roundMs: ROUND_MS, statistic: "median over interleaved rounds of CPU time (user + system) per stream", gatewayUsPerRequest: GATEWAY_US_PER_REQUEST },
      loadAverage: { start: loadAtStart, end: loadAtEnd },
      cases: results,
      overheads,
      workerd,
    },
    null,
    2,
  )}\n`,
);
console.log(`\nwrote ${out}`);

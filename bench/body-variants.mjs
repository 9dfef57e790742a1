// node bench/body-variants.mjs [--rounds=N] [--batch=N] — what each way of
// handing an origin's body to the client costs in workerd (issue 24), as
// the CPU time of workerd's isolate thread per request (bench/lib/thread-cpu.mjs),
// in a minimal Worker so nothing else of the gateway is in the figure. A
// benchmark, never a timed test; prints a Markdown table and writes
// bench/results/body-variants.json.
//
// Variants (a query parameter picks one per request):
// - pass: `new Response(origin.body, origin)`, the runtime's native pump
// - watch: piped through an IdentityTransformStream to learn when the body
//   has been delivered (how the gateway holds an in-flight slot to the end)
// - tee: the origin's body teed, the second branch read and scanned for the
//   SSE cost (src/proxy/response-cost.ts, as the gateway does today)
// - tee-floor: teed, the second branch cancelled at once (the tee alone)
// - transform: the SSE scanner in the client's path, in a TransformStream
// - pump: the SSE scanner in the client's path, read by a loop that writes
//   each chunk on to an IdentityTransformStream (no JS stream in between)
//
// Two origins: 100 KB SSE written one event at a time (~370 chunks, as an
// LLM API streams) and all at once; and a 2-byte answer (the end-to-end
// bench's GET) for pass and watch.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isolateThread, threadCpu } from "./lib/thread-cpu.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const arg = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
const ROUNDS = arg("rounds", 5);
const BATCH = arg("batch", 150);

const encoder = new TextEncoder();
function sseEvents() {
  const events = [];
  let total = 0;
  for (let i = 0; total < 100_000 - 300; i++) {
    const content = JSON.stringify(`${["Hello", " world", "!\n\n", ' "quoted"', " and", " more", " text"][i % 7]} ${i}`);
    const event = `data: {"id":"chatcmpl-9AbCdEfGhIj","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":{"content":${content}},"finish_reason":null}],"usage":null}\n\n`;
    events.push(encoder.encode(event));
    total += event.length;
  }
  events.push(encoder.encode('data: {"id":"chatcmpl-9AbCdEfGhIj","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":371,"total_tokens":391}}\n\n'));
  events.push(encoder.encode("data: [DONE]\n\n"));
  return events;
}
const perEvent = sseEvents();
const sseWhole = Buffer.concat(perEvent);

const WORKER_SOURCE = `
import { compileJsonPath } from "../src/proxy/json-path.ts";
import { tapCost } from "../src/proxy/response-cost.ts";
import { SseCostScanner } from "../src/proxy/sse-scanner.ts";
const path = compileJsonPath("usage.total_tokens");
function check(ctx, cost) {
  ctx.waitUntil(Promise.resolve(cost).then((c) => { if (!c.found || c.cost !== 391) console.error("cost not found: " + JSON.stringify(c)); }));
}
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const variant = url.searchParams.get("v");
    const origin = await fetch(env.ORIGIN_URL + url.pathname);
    const sse = url.pathname !== "/small";
    switch (variant) {
      case "pass":
        return new Response(origin.body, origin);
      case "watch": {
        const { readable, writable } = new IdentityTransformStream();
        let ended = false;
        origin.body.pipeTo(writable).then(() => (ended = true), () => (ended = true));
        return new Response(readable, origin);
      }
      case "tee": {
        const tapped = tapCost(origin.body, path, origin.headers.get("content-type"));
        check(ctx, tapped.cost);
        return new Response(tapped.body, origin);
      }
      case "tee-floor": {
        const [client, other] = origin.body.tee();
        other.cancel().catch(() => {});
        return new Response(client, origin);
      }
      case "transform": {
        const scanner = new SseCostScanner(path);
        let done;
        const cost = new Promise((r) => (done = r));
        const body = origin.body.pipeThrough(new TransformStream({
          transform(chunk, controller) { scanner.push(chunk); controller.enqueue(chunk); },
          flush() { done(scanner.end()); },
        }));
        check(ctx, cost);
        return new Response(body, origin);
      }
      case "pump": {
        const scanner = new SseCostScanner(path);
        const { readable, writable } = new IdentityTransformStream();
        const reader = origin.body.getReader();
        const writer = writable.getWriter();
        const cost = (async () => {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            scanner.push(value);
            await writer.write(value);
          }
          await writer.close();
          return scanner.end();
        })();
        check(ctx, cost);
        return new Response(readable, origin);
      }
    }
    return new Response("unknown variant", { status: 400 });
  },
};
`;

/** CPU time of workerd's isolate thread, in ns (V8's helper threads left out, as bench/run.mjs reads it). */
function isolateCpuNs(pid) {
  return threadCpu(pid, isolateThread(pid)).ns;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

if (process.env.TOLLGATE_BENCH_CHILD !== "1") {
  const child = spawnSync(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: "inherit", env: { ...process.env, TOLLGATE_BENCH_CHILD: "1" } });
  process.exit(child.status ?? 1);
}

const { startWorker, readCompatibility } = await import("./lib/instances.mjs");
const { cleanupAll, onCleanup } = await import("./lib/cleanup.mjs");
const esbuild = await import("esbuild");
const dir = mkdtempSync(join(os.tmpdir(), "tollgate-body-bench-"));
onCleanup(() => rmSync(dir, { recursive: true, force: true }));
let results;
try {
  const scriptPath = join(dir, "worker.js");
  await esbuild.build({ stdin: { contents: WORKER_SOURCE, resolveDir: here, sourcefile: "body-variants.js" }, bundle: true, format: "esm", platform: "neutral", target: "es2022", outfile: scriptPath, logLevel: "error" });
  const origin = createServer(async (req, res) => {
    if (req.url === "/small") {
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" });
      res.end("ok");
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
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
  const worker = await startWorker({ name: "body-variants", scriptPath, bindings: { ORIGIN_URL: `http://127.0.0.1:${origin.address().port}` }, compat: readCompatibility(join(here, "..")), extra: { modulesRoot: dir } });
  if (worker.pid === null) throw new Error("could not find the workerd process");
  const one = async (origin, variant) => {
    const res = await fetch(`${worker.url}/${origin}?v=${variant}`);
    const body = new Uint8Array(await res.arrayBuffer());
    const expected = origin === "small" ? 2 : sseWhole.length;
    if (body.length !== expected) throw new Error(`${origin} ${variant}: got ${body.length} bytes, not ${expected}`);
  };
  const combos = [];
  for (const o of ["paced", "burst"]) for (const v of ["pass", "watch", "tee", "tee-floor", "transform", "pump"]) combos.push({ origin: o, variant: v, samples: [] });
  for (const v of ["pass", "watch"]) combos.push({ origin: "small", variant: v, samples: [] });
  for (const c of combos) for (let k = 0; k < 30; k++) await one(c.origin, c.variant);
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of combos) {
      const n = c.origin === "small" ? BATCH * 4 : BATCH;
      const before = isolateCpuNs(worker.pid);
      for (let k = 0; k < n; k++) await one(c.origin, c.variant);
      await new Promise((resolve) => setTimeout(resolve, 20));
      c.samples.push((isolateCpuNs(worker.pid) - before) / n / 1000);
    }
    console.log(`round ${r + 1}/${ROUNDS}`);
  }
  const complaints = worker.stderrTail.join("").split("\n").filter((l) => l.includes("cost not found"));
  if (complaints.length > 0) throw new Error(`a variant missed the cost: ${complaints[0]}`);
  results = combos.map((c) => {
    const pass = combos.find((p) => p.origin === c.origin && p.variant === "pass").samples;
    const ratios = c.samples.map((s, i) => s / pass[i]);
    return { origin: c.origin, variant: c.variant, us_per_request: median(c.samples), vs_pass: median(ratios), vs_pass_range: [Math.min(...ratios), Math.max(...ratios)], samples: c.samples };
  });
} finally {
  await cleanupAll();
}
const lines = ["| origin | variant | workerd µs per request (median) | vs pass, median round (range) |", "| --- | --- | ---: | ---: |"];
for (const r of results) lines.push(`| ${r.origin} | ${r.variant} | ${r.us_per_request.toFixed(0)} | ${r.vs_pass.toFixed(2)} (${r.vs_pass_range[0].toFixed(2)}–${r.vs_pass_range[1].toFixed(2)}) |`);
console.log(lines.join("\n"));
mkdirSync(join(here, "results"), { recursive: true });
writeFileSync(join(here, "results", "body-variants.json"), JSON.stringify({ at: new Date().toISOString(), load_average: os.loadavg(), rounds: ROUNDS, batch: BATCH, results }, null, 2));

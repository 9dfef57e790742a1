// An open-loop load at a fixed rate, on its own thread: request i is due at
// start + i / rate, is sent then whether or not earlier ones have answered
// (on a pool of keep-alive connections), and its latency is counted from when
// it was due, so a stall anywhere (server, network, this thread) shows up in
// the figures instead of silently delaying the next request. autocannon's own
// rate option sends each second's quota in a burst and waits, which is not a
// fixed rate. Posts back one summary, in the shape load-thread.mjs posts.
import { Agent, request } from "node:http";
import { parentPort, workerData } from "node:worker_threads";
import { summarise } from "./latency.mjs";

const spec = workerData;
const url = new URL(spec.url);
const agent = new Agent({ keepAlive: true, maxSockets: spec.maxSockets ?? 64 });
// The first warmupS seconds open the connection pool and are not counted.
const warmCount = Math.round(spec.ratePerS * (spec.warmupS ?? 0));
const total = warmCount + Math.round(spec.ratePerS * spec.durationS);
const body = spec.kind === "upload" ? Buffer.alloc(spec.bodyBytes, 0x61) : null;
const latencies = [];
const ok = [];
const byStatus = {};
const serverErrors = [];
/** With spec.keepSlowMs: [due offset ms, latency ms] of every answer slower than that, to see when stalls happen. */
const slow = [];
let errors = 0;
/** Socket errors by code (ECONNRESET, timeout, …). */
const errorCodes = {};
let sent = 0;
let settled = 0;
let stopped = false;
const start = performance.now();

function finishIfDone() {
  if (settled < sent || (sent < total && !stopped)) return;
  clearInterval(ticker);
  agent.destroy();
  const elapsedS = (performance.now() - start) / 1000 - warmCount / spec.ratePerS;
  parentPort.postMessage({
    kind: spec.kind,
    label: spec.label,
    rate_per_s: spec.ratePerS,
    elapsed_s: Math.round(elapsedS * 1000) / 1000,
    responses: latencies.length,
    requests_per_s: Math.round((latencies.length / elapsedS) * 10) / 10,
    status: byStatus,
    errors,
    error_codes: errorCodes,
    retried_stale_socket: retriedStaleSocket,
    timeouts: 0,
    latency: summarise(latencies),
    latency_2xx: summarise(ok),
    server_errors: serverErrors,
    ...(spec.keepSlowMs !== undefined ? { slow } : {}),
  });
}

/** GETs retried once after ECONNRESET on a reused keep-alive socket (the server closed it as it was picked): Node's advice for idempotent requests. */
let retriedStaleSocket = 0;

function fire(i, retry = false) {
  const dueAt = start + (i * 1000) / spec.ratePerS;
  const path = spec.kind === "upload" ? `/objects/${spec.prefix}-${i}` : spec.path;
  const headers = { ...(spec.headers ?? {}) };
  if (body) {
    headers["content-type"] = "application/octet-stream";
    headers["content-length"] = String(body.length);
  }
  let counted = false;
  const req = request({ host: url.hostname, port: url.port, path, method: body ? "PUT" : "GET", headers, agent }, (res) => {
    const chunks = [];
    res.on("data", (c) => {
      if (res.statusCode >= 500) chunks.push(c);
    });
    res.on("end", () => {
      if (counted) return;
      counted = true;
      settled += 1;
      if (i < warmCount) {
        finishIfDone();
        return;
      }
      const ms = performance.now() - dueAt;
      latencies.push(ms);
      if (spec.keepSlowMs !== undefined && ms > spec.keepSlowMs && slow.length < 10_000) slow.push([Math.round(dueAt - start), Math.round(ms * 10) / 10]);
      if (res.statusCode >= 200 && res.statusCode < 300) ok.push(ms);
      byStatus[res.statusCode] = (byStatus[res.statusCode] ?? 0) + 1;
      if (res.statusCode >= 500 && serverErrors.length < 5) serverErrors.push({ status: res.statusCode, body: Buffer.concat(chunks).toString().slice(0, 500) });
      finishIfDone();
    });
  });
  req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
  req.on("error", (err) => {
    if (counted) return;
    counted = true;
    if (!retry && !body && req.reusedSocket && err.code === "ECONNRESET") {
      if (i >= warmCount) retriedStaleSocket += 1;
      fire(i, true);
      return;
    }
    if (i >= warmCount) {
      errors += 1;
      const code = `${err.code ?? err.message}${req.reusedSocket ? " (reused keep-alive socket)" : ""}`;
      errorCodes[code] = (errorCodes[code] ?? 0) + 1;
    }
    settled += 1;
    finishIfDone();
  });
  req.end(body ?? undefined);
}

const ticker = setInterval(() => {
  if (stopped) return;
  const due = Math.min(total, Math.floor(((performance.now() - start) * spec.ratePerS) / 1000) + 1);
  while (sent < due) fire(sent++);
  if (sent >= total) finishIfDone();
}, 1);

parentPort.on("message", (msg) => {
  if (msg === "stop") {
    stopped = true;
    finishIfDone();
  }
});

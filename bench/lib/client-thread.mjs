// The harness's HTTP client, on a thread of its own, with keep-alive
// connections kept open across runs (so a slice of a few hundred requests
// pays no connection set-up, and variants can alternate slice by slice).
// Each message {id, mode, url, path, headers?, kind?, tokens?, …} runs one
// bounded load and answers {id, …figures}; "close" ends the thread.
//
// - mode "count": `amount` requests, `connections` at a time (closed loop);
//   answers {answers, status, errors, elapsed_ms}.
// - mode "duration": closed loop on `connections` for `durationS`;
//   answers {answers, status, errors, elapsed_ms, requests_per_s}.
// - mode "rate": open loop at `ratePerS` for `durationS` after `warmupS`:
//   request i is due at start + i / rate and is sent then whether or not
//   earlier ones have answered; its latency counts from when it was due, so
//   a stall anywhere shows in the figures instead of delaying the next
//   request. Answers {answers, status, errors, latency: {p50_ms, p99_ms, …}}.
//
// kind "get" sends `headers` as they are; "flood" adds a made-up key of the
// managed form and a fresh address per request (a flood of invalid keys);
// "tokens" sends tokens[i] as the Bearer credential of request i; "upload"
// PUTs `bodyBytes` bytes to /objects/<prefix>-<i> (a new object each).
import { randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import { parentPort } from "node:worker_threads";
import { summarise } from "./latency.mjs";

const KEY_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const agents = new Map();

function agentFor(url, sockets) {
  const key = `${url}|${sockets}`;
  let agent = agents.get(key);
  if (agent === undefined) {
    agent = new Agent({ keepAlive: true, maxSockets: sockets });
    agents.set(key, agent);
  }
  return agent;
}

function randomBase32(chars) {
  let out = "";
  for (const b of randomBytes(chars)) out += KEY_ALPHABET[b & 31];
  return out;
}

function randomIpv4() {
  const b = randomBytes(4);
  return `${11 + (b[0] % 212)}.${b[1]}.${b[2]}.${1 + (b[3] % 254)}`;
}

function headersFor(spec, i) {
  if (spec.kind === "flood") return { ...spec.headers, authorization: `Bearer tg_${randomBase32(12)}_${randomBase32(32)}`, "cf-connecting-ip": randomIpv4() };
  if (spec.kind === "tokens") return { ...spec.headers, authorization: `Bearer ${spec.tokens[i % spec.tokens.length]}` };
  return spec.headers ?? {};
}

const bodies = new Map();

/** One request; resolves its status code, or "error". Reads the whole answer. */
function one(spec, agent, i) {
  const upload = spec.kind === "upload";
  const url = new URL(upload ? `/objects/${spec.prefix}-${i}` : spec.path, spec.url);
  let body = null;
  let headers = headersFor(spec, i);
  if (upload) {
    if (!bodies.has(spec.bodyBytes)) bodies.set(spec.bodyBytes, Buffer.alloc(spec.bodyBytes, 0x61));
    body = bodies.get(spec.bodyBytes);
    headers = { ...headers, "content-type": "application/octet-stream", "content-length": String(body.length) };
  }
  return new Promise((resolve) => {
    const req = request(url, { agent, method: upload ? "PUT" : "GET", headers }, (res) => {
      res.on("data", () => {});
      res.on("end", () => resolve(res.statusCode));
      res.on("error", () => resolve("error"));
    });
    req.setTimeout(10_000, () => req.destroy(new Error("timeout")));
    req.on("error", () => resolve("error"));
    req.end(body ?? undefined);
  });
}

async function closedLoop(spec) {
  const agent = agentFor(spec.url, spec.connections);
  const status = {};
  let errors = 0;
  let next = 0;
  const t0 = performance.now();
  const until = spec.mode === "duration" ? t0 + spec.durationS * 1000 : Infinity;
  const more = () => (spec.mode === "count" ? next < spec.amount : performance.now() < until);
  const loop = async () => {
    while (more()) {
      const code = await one(spec, agent, next++);
      if (code === "error") errors += 1;
      else status[code] = (status[code] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: spec.connections }, loop));
  const elapsedMs = performance.now() - t0;
  const answers = next - errors;
  return { answers, status, errors, elapsed_ms: Math.round(elapsedMs * 10) / 10, requests_per_s: Math.round((answers / elapsedMs) * 1e4) / 10 };
}

function openLoop(spec) {
  const agent = agentFor(spec.url, spec.maxSockets ?? 64);
  const warm = Math.round(spec.ratePerS * (spec.warmupS ?? 0));
  const total = warm + Math.round(spec.ratePerS * spec.durationS);
  const latencies = [];
  const status = {};
  let errors = 0;
  let sent = 0;
  let settled = 0;
  const start = performance.now();
  return new Promise((resolve) => {
    const settle = (i, code) => {
      settled += 1;
      if (i >= warm) {
        if (code === "error") errors += 1;
        else {
          latencies.push(performance.now() - (start + (i * 1000) / spec.ratePerS));
          status[code] = (status[code] ?? 0) + 1;
        }
      }
      if (settled === total) {
        clearInterval(ticker);
        resolve({ answers: latencies.length, status, errors, latency: summarise(latencies) });
      }
    };
    const ticker = setInterval(() => {
      const due = Math.min(total, Math.floor(((performance.now() - start) * spec.ratePerS) / 1000) + 1);
      while (sent < due) {
        const i = sent++;
        void one(spec, agent, i).then((code) => settle(i, code));
      }
    }, 1);
  });
}

parentPort.on("message", async (msg) => {
  if (msg === "close") {
    for (const agent of agents.values()) agent.destroy();
    parentPort.close();
    return;
  }
  try {
    const out = msg.mode === "rate" ? await openLoop(msg) : await closedLoop(msg);
    parentPort.postMessage({ id: msg.id, ...out });
  } catch (err) {
    parentPort.postMessage({ id: msg.id, error: String(err?.message ?? err) });
  }
});

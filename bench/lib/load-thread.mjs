// One autocannon run on its own thread (so two loads, or a load and the
// origin, never share an event loop). Started by load.mjs with a spec in
// workerData; posts back one summary. Latency is taken from autocannon's
// 'response' event (float milliseconds from process.hrtime), because its own
// histogram rounds to whole milliseconds.
import { randomBytes } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import autocannon from "autocannon";
import { summarise } from "./latency.mjs";

const spec = workerData;
const KEY_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

function randomBase32(chars) {
  const bytes = randomBytes(chars);
  let out = "";
  for (const b of bytes) out += KEY_ALPHABET[b & 31];
  return out;
}

/** A well-formed key nobody minted: it passes the format check, and the gateway must find out it is not real. */
function randomKey() {
  return `tg_${randomBase32(12)}_${randomBase32(32)}`;
}

/** A random public-looking IPv4 address (first octet 11–222, never loopback or private 10/8). */
function randomIpv4() {
  const b = randomBytes(4);
  return `${11 + (b[0] % 212)}.${b[1]}.${b[2]}.${1 + (b[3] % 254)}`;
}

/** The first few 5xx answers, status and body, so a failure can be explained. */
const serverErrors = [];
function onResponse(status, body, _context, headers) {
  if (status >= 500 && serverErrors.length < 5) serverErrors.push({ status, body: String(body ?? "").slice(0, 500), headers });
}

function requestsFor(spec) {
  const headers = { ...(spec.headers ?? {}) };
  switch (spec.kind) {
    case "get":
      return [{ method: "GET", path: spec.path, headers, onResponse }];
    case "upload": {
      // PUT /objects/<prefix>-<n>: unique names (n counts up) unless spec.names
      // bounds the set, in which case names repeat (a re-upload of an owned object).
      const body = Buffer.alloc(spec.bodyBytes, 0x61).toString();
      let n = 0;
      return [
        {
          method: "PUT",
          headers: { ...headers, "content-type": "application/octet-stream" },
          body,
          onResponse,
          setupRequest(req) {
            const i = spec.names ? n % spec.names : n;
            n += 1;
            req.path = `/objects/${spec.prefix}-${i}`;
            return req;
          },
        },
      ];
    }
    case "tokens": {
      // Each request presents the next of spec.tokens (a JWT signed beforehand), once: every one is new to the gateway.
      let n = 0;
      return [
        {
          method: "GET",
          path: spec.path,
          onResponse,
          setupRequest(req) {
            const token = spec.tokens[n % spec.tokens.length];
            n += 1;
            req.headers = { ...headers, authorization: `Bearer ${token}` };
            return req;
          },
        },
      ];
    }
    case "flood":
      return [
        {
          method: "GET",
          path: spec.path,
          onResponse,
          setupRequest(req) {
            // keyShape "malformed": a random string the format check refuses
            // before any hash or lookup; "none": anonymous requests.
            const credential = spec.keyShape === "none" ? {} : { authorization: `Bearer ${spec.keyShape === "malformed" ? `tg_${randomBase32(20)}` : randomKey()}` };
            req.headers = { ...headers, ...credential, "cf-connecting-ip": randomIpv4() };
            return req;
          },
        },
      ];
    default:
      throw new Error(`unknown load kind ${spec.kind}`);
  }
}

const all = [];
const ok = [];
const byStatus = {};
const opts = {
  url: spec.url,
  connections: spec.connections,
  pipelining: 1,
  timeout: 10,
  requests: requestsFor(spec),
  ...(spec.amount ? { amount: spec.amount } : { duration: spec.durationS }),
  ...(spec.overallRate ? { overallRate: spec.overallRate } : {}),
};
const startedAt = process.hrtime.bigint();
const instance = autocannon(opts, (err, result) => {
  const elapsedS = Number(process.hrtime.bigint() - startedAt) / 1e9;
  if (err) {
    parentPort.postMessage({ error: String(err?.message ?? err) });
    return;
  }
  parentPort.postMessage({
    kind: spec.kind,
    label: spec.label,
    connections: spec.connections,
    elapsed_s: Math.round(elapsedS * 1000) / 1000,
    responses: all.length,
    requests_per_s: Math.round((all.length / elapsedS) * 10) / 10,
    status: byStatus,
    errors: result.errors,
    timeouts: result.timeouts,
    latency: summarise(all),
    latency_2xx: summarise(ok),
    server_errors: serverErrors,
  });
});
instance.on("response", (_client, statusCode, _bytes, responseTimeMs) => {
  all.push(responseTimeMs);
  if (statusCode >= 200 && statusCode < 300) ok.push(responseTimeMs);
  byStatus[statusCode] = (byStatus[statusCode] ?? 0) + 1;
});
parentPort.on("message", (msg) => {
  if (msg === "stop") instance.stop();
});

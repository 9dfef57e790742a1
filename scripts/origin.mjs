// A small HTTP origin for local runs and tests. It answers every request with
// JSON describing what it received: method, path, query, headers, and the
// body's length and SHA-256 (so a multi-megabyte body is checked exactly
// without echoing it back). It binds 127.0.0.1 only.
//
// Test controls, read from request headers (never needed by a demo user):
//   x-origin-status: <code>        answer with this status
//   x-origin-delay-ms: <n>         wait n ms before answering (in-flight tests)
//   x-origin-body-bytes: <n>       answer with n bytes of a fixed pattern instead of JSON
// Priced answers (docs/design.md; values are written into the JSON verbatim, so a
// test can send 12.5, -3, "7" or a broken value):
//   x-origin-usage-header: <v>     also answer with header x-usage-total-tokens: <v>
//   x-origin-json-usage: <v>       the JSON answer also holds "usage": {..., "total_tokens": <v>}
//   x-origin-json-pad-bytes: <n>   ... after a "padding" string of n bytes (for the 1 MiB bound)
//   x-origin-sse-usage: <v>|none   answer text/event-stream in the OpenAI shape: events of
//                                  "usage": null, then one with total_tokens <v> (none: no such
//                                  event), then data: [DONE]
//   x-origin-sse-events: <n>       that many content events first (default 10)
//   x-origin-sse-interval-ms: <n>  wait n ms between events (hang-up tests)
// The record of a request also says how its answer ended: response_end is
// "finished" or "closed_early" (the client or gateway went away first), and
// sse_events_written counts the events sent.
// Every request is also recorded (most recent 5,000) and can be read back with
// GET /__origin/requests?tag=<x-test-tag value>; that path is answered by the
// origin itself and is not recorded.
//
// Key sets for the JWT tests (answered by the origin itself, not recorded):
//   PUT /__origin/jwks/<name>              body: a JSON Web Key Set, served from then on
//   PUT /__origin/jwks/<name>?status=<n>   GETs of <name> answer status n (200 serves the set
//                                          again); an empty body keeps the set
//   GET /__origin/jwks/<name>              the set, or 404 before any PUT
//   GET /__origin/jwks-redirect/<name>     302 to /__origin/jwks/<name> (JWKS fetches must not follow it)
//
// A webhook receiver for the alert tests (answered by the origin itself, not recorded):
//   POST /__origin/webhook/<name>?statuses=500,200   records the delivery (headers and body
//                                          text) and answers the next status of the list the first
//                                          request to <name> gave (then 200 once it runs out)
//   GET /__origin/webhook/<name>           the deliveries received, oldest first, each with the
//                                          status it was answered
//
// WebSockets: every `Upgrade: websocket` request, on any path, is an echo with
// test controls (scripts/origin-ws.mjs), recorded like the rest, unless it carries
//   x-origin-ignore-upgrade: 1     answer it as a plain HTTP GET instead (as most
//                                  frameworks do): the JSON answer, with x-origin-status,
//                                  x-origin-delay-ms, x-origin-usage-header and
//                                  x-origin-json-usage as above
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { createWsOrigin } from "./origin-ws.mjs";

const MAX_RECORDED = 5000;
const MAX_DELAY_MS = 30_000;
const MAX_JWKS_NAMES = 1000;
const MAX_JWKS_BODY_BYTES = 256 * 1024;
const JWKS_PATH = /^\/__origin\/jwks\/([A-Za-z0-9._-]{1,128})$/;
const JWKS_REDIRECT_PATH = /^\/__origin\/jwks-redirect\/([A-Za-z0-9._-]{1,128})$/;
const WEBHOOK_PATH = /^\/__origin\/webhook\/([A-Za-z0-9._-]{1,128})$/;
const MAX_WEBHOOK_NAMES = 1000;
const MAX_SSE_EVENTS = 100_000;
const MAX_SSE_INTERVAL_MS = 1000;
const MAX_PAD_BYTES = 8 * 1024 * 1024;

function serveWebhook(webhooks, name, url, req, res) {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(webhooks.get(name)?.received ?? []));
    return;
  }
  let hook = webhooks.get(name);
  if (hook === undefined) {
    if (webhooks.size >= MAX_WEBHOOK_NAMES) webhooks.delete(webhooks.keys().next().value);
    const statuses = (url.searchParams.get("statuses") ?? "").split(",").filter(Boolean).map((s) => Number(s) || 200);
    hook = { statuses, received: [] };
    webhooks.set(name, hook);
  }
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("error", () => {});
  req.on("end", () => {
    const status = hook.statuses.shift() ?? 200;
    hook.received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), status });
    res.writeHead(status, { "content-type": "text/plain" });
    res.end(String(status));
  });
}

export function startOrigin({ port = 0, host = "127.0.0.1" } = {}) {
  const recorded = [];
  const jwks = new Map();
  const record = (seen) => {
    recorded.push(seen);
    if (recorded.length > MAX_RECORDED) recorded.shift();
  };
  const wsOrigin = createWsOrigin(record);
  const webhooks = new Map();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://origin.invalid");
    const redirectName = JWKS_REDIRECT_PATH.exec(url.pathname)?.[1];
    if (redirectName !== undefined) {
      res.writeHead(302, { location: `/__origin/jwks/${redirectName}`, "content-length": "0" });
      res.end();
      return;
    }
    const jwksName = JWKS_PATH.exec(url.pathname)?.[1];
    if (jwksName !== undefined) {
      serveJwks(jwks, jwksName, url, req, res);
      return;
    }
    const webhookName = WEBHOOK_PATH.exec(url.pathname)?.[1];
    if (webhookName !== undefined) {
      serveWebhook(webhooks, webhookName, url, req, res);
      return;
    }
    if (url.pathname === "/__origin/requests") {
      const tag = url.searchParams.get("tag");
      const rows = tag === null ? recorded : recorded.filter((r) => r.headers["x-test-tag"] === tag);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(rows));
      return;
    }
    const hash = createHash("sha256");
    let bodyBytes = 0;
    req.on("data", (chunk) => {
      bodyBytes += chunk.length;
      hash.update(chunk);
    });
    req.on("error", () => {});
    req.on("end", () => {
      const seen = {
        method: req.method,
        url: req.url,
        path: url.pathname,
        query: url.search,
        headers: req.headers,
        raw_header_names: req.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase()),
        body_bytes: bodyBytes,
        body_sha256: hash.digest("hex"),
      };
      record(seen);
      const status = Number(req.headers["x-origin-status"] ?? 200) || 200;
      const delayMs = Math.min(Number(req.headers["x-origin-delay-ms"] ?? 0) || 0, MAX_DELAY_MS);
      const outBytes = Number(req.headers["x-origin-body-bytes"] ?? -1);
      res.once("close", () => {
        seen.response_end = res.writableFinished ? "finished" : "closed_early";
      });
      setTimeout(() => {
        if (res.destroyed) return;
        if (req.headers["x-origin-sse-usage"] !== undefined) {
          writeSse(res, status, req.headers, seen);
        } else if (outBytes >= 0) {
          res.writeHead(status, { "content-type": "application/octet-stream", "content-length": String(outBytes), "x-origin-seen": "1" });
          writePattern(res, outBytes);
        } else {
          const body = jsonAnswer(seen, req.headers);
          const headers = { "content-type": "application/json", "x-origin-seen": "1", connection: "keep-alive", "keep-alive": "timeout=5" };
          if (req.headers["x-origin-usage-header"] !== undefined) headers["x-usage-total-tokens"] = req.headers["x-origin-usage-header"];
          res.writeHead(status, headers);
          res.end(body);
        }
      }, delayMs);
    });
  });
  server.on("upgrade", (req, socket, head) => {
    socket.on("error", () => {});
    if (req.headers["x-origin-ignore-upgrade"] !== undefined) answerUpgradeAsHttp(req, socket, record);
    else if ((req.headers.upgrade ?? "").toLowerCase() === "websocket") wsOrigin.handleUpgrade(req, socket, head);
    else socket.destroy();
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address();
      resolve({
        server,
        port: typeof address === "object" && address ? address.port : port,
        close: () => new Promise((done) => { wsOrigin.close(); server.closeAllConnections?.(); server.close(() => done()); }),
      });
    });
  });
}

// A test's key set: set with PUT (and made to fail with ?status=), served with GET.
function serveJwks(jwks, name, url, req, res) {
  if (req.method === "GET") {
    const entry = jwks.get(name);
    if (entry === undefined) return answer(res, 404, { error: "no such key set" });
    if (entry.status !== 200) return answer(res, entry.status, { error: "failing on purpose" });
    res.writeHead(200, { "content-type": "application/json", "content-length": String(Buffer.byteLength(entry.body)) });
    res.end(entry.body);
    return;
  }
  if (req.method !== "PUT") return answer(res, 405, { error: "GET or PUT" });
  const chunks = [];
  let bytes = 0;
  req.on("data", (chunk) => {
    bytes += chunk.length;
    if (bytes <= MAX_JWKS_BODY_BYTES) chunks.push(chunk);
  });
  req.on("error", () => {});
  req.on("end", () => {
    if (bytes > MAX_JWKS_BODY_BYTES) return answer(res, 413, { error: "key set too large" });
    const status = Number(url.searchParams.get("status") ?? 200);
    if (!Number.isInteger(status) || status < 200 || status > 599) return answer(res, 400, { error: "status must be 200-599" });
    const text = Buffer.concat(chunks).toString("utf8");
    const previous = jwks.get(name);
    if (text === "" && previous === undefined && status === 200) return answer(res, 400, { error: "a key set is required" });
    if (text !== "") {
      try {
        JSON.parse(text);
      } catch {
        return answer(res, 400, { error: "the body must be JSON" });
      }
    }
    jwks.delete(name);
    if (jwks.size >= MAX_JWKS_NAMES) jwks.delete(jwks.keys().next().value);
    jwks.set(name, { body: text !== "" ? text : (previous?.body ?? "{}"), status });
    answer(res, 204, null);
  });
}

function answer(res, status, body) {
  if (body === null) {
    res.writeHead(status);
    res.end();
    return;
  }
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

// An upgrade answered as if `Upgrade` were not there: the JSON answer of a
// bodyless request, written on the raw socket (node hands upgrades over before
// any response object exists), then the connection closes.
function answerUpgradeAsHttp(req, socket, record) {
  const url = new URL(req.url ?? "/", "http://origin.invalid");
  const seen = {
    method: req.method,
    url: req.url,
    path: url.pathname,
    query: url.search,
    headers: req.headers,
    raw_header_names: req.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase()),
    body_bytes: 0,
    body_sha256: createHash("sha256").digest("hex"),
    upgrade_ignored: true,
  };
  record(seen);
  const status = Number(req.headers["x-origin-status"] ?? 200) || 200;
  const delayMs = Math.min(Number(req.headers["x-origin-delay-ms"] ?? 0) || 0, MAX_DELAY_MS);
  setTimeout(() => {
    if (socket.destroyed) return;
    const body = jsonAnswer(seen, req.headers);
    const usage = req.headers["x-origin-usage-header"];
    const usageLine = usage === undefined ? "" : `x-usage-total-tokens: ${usage}\r\n`;
    socket.end(`HTTP/1.1 ${status} Answered\r\ncontent-type: application/json\r\nx-origin-seen: 1\r\n${usageLine}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    seen.response_end = "finished";
  }, delayMs);
}

// The JSON answer: what was received, and a usage object when asked for.
function jsonAnswer(seen, headers) {
  const body = JSON.stringify(seen);
  const usage = headers["x-origin-json-usage"];
  if (usage === undefined) return body;
  const padBytes = Math.min(Math.max(Number(headers["x-origin-json-pad-bytes"] ?? 0) || 0, 0), MAX_PAD_BYTES);
  const padding = padBytes > 0 ? `"padding":"${"x".repeat(padBytes)}",` : "";
  return `${body.slice(0, -1)},${padding}"usage":{"prompt_tokens":9,"completion_tokens":12,"total_tokens":${usage}}}`;
}

// An OpenAI-shaped chat completion stream, one write per event.
function writeSse(res, status, headers, seen) {
  const usage = headers["x-origin-sse-usage"];
  const events = Math.min(Math.max(Number(headers["x-origin-sse-events"] ?? 10) || 0, 0), MAX_SSE_EVENTS);
  const intervalMs = Math.min(Math.max(Number(headers["x-origin-sse-interval-ms"] ?? 0) || 0, 0), MAX_SSE_INTERVAL_MS);
  const chunk = (i, delta) =>
    `data: {"id":"chatcmpl-${i}","object":"chat.completion.chunk","created":1700000000,"model":"demo","choices":[{"index":0,"delta":${delta},"finish_reason":null}],"usage":null}\n\n`;
  const lines = [];
  for (let i = 0; i < events; i++) lines.push(chunk(i, `{"content":"token ${i} "}`));
  if (usage !== "none") lines.push(`data: {"id":"chatcmpl-${events}","object":"chat.completion.chunk","created":1700000000,"model":"demo","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":${events},"total_tokens":${usage}}}\n\n`);
  lines.push("data: [DONE]\n\n");
  seen.sse_events_written = 0;
  res.writeHead(status, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", "x-origin-seen": "1" });
  let next = 0;
  const pump = () => {
    while (next < lines.length) {
      if (res.destroyed) return;
      const ok = res.write(lines[next++]);
      seen.sse_events_written++;
      if (intervalMs > 0) { setTimeout(pump, intervalMs); return; }
      if (!ok) { res.once("drain", pump); return; }
    }
    res.end();
  };
  pump();
}

// Byte i of the pattern is i mod 251, so a client can check any range exactly.
function writePattern(res, total) {
  const CHUNK = 64 * 1024;
  let sent = 0;
  const pump = () => {
    while (sent < total) {
      const n = Math.min(CHUNK, total - sent);
      const chunk = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i++) chunk[i] = (sent + i) % 251;
      sent += n;
      if (!res.write(chunk)) { res.once("drain", pump); return; }
    }
    res.end();
  };
  pump();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = Number(process.env.PORT ?? 8788);
  startOrigin({ port }).then(
    ({ port: bound }) => console.log(`demo origin listening on http://127.0.0.1:${bound}`),
    (err) => {
      console.error(err.code === "EADDRINUSE" ? `port ${port} is already in use: set PORT to a free port` : `origin failed to start: ${err.message}`);
      process.exit(1);
    },
  );
}

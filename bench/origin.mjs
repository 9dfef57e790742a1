// The bench's origin: answers every request with the same 2-byte body as fast
// as Node can, after reading (and discarding) any request body. A fast origin
// makes the gateway's own cost visible. Binds 127.0.0.1 only.
//
// Paths under /sse/ answer a 100 KB OpenAI-shaped chat completion stream
// instead (text/event-stream, chunked): ~370 events with "usage": null, one
// with the usage (total_tokens SSE_TOTAL_TOKENS), then data: [DONE]; one
// write per event with a turn of the event loop between writes, as an LLM
// API streams (issue 15's measure).
//
// /__echo answers the request's header names and values as JSON: the
// harness's check that a control forwards what the gateway forwards.
//
// Run on its own thread (startOriginThread) so the load generator's event
// loop never delays it.
import { createServer } from "node:http";
import { serveOnThisThread, startServerThread } from "./lib/server-thread.mjs";

const BODY = Buffer.from("ok");
const HEADERS = { "content-type": "text/plain", "content-length": String(BODY.length) };
export const SSE_BYTES_TARGET = 100_000;
export const SSE_TOTAL_TOKENS = 391;
const SSE_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" };

/** The events of the 100 KB stream, each a Buffer written on its own. */
export function sseEvents() {
  const events = [];
  let total = 0;
  for (let i = 0; total < SSE_BYTES_TARGET - 300; i++) {
    const content = JSON.stringify(`${["Hello", " world", "!\n\n", ' "quoted"', " and", " more", " text"][i % 7]} ${i}`);
    const event = `data: {"id":"chatcmpl-9AbCdEfGhIj","object":"chat.completion.chunk","created":1718000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":${content}},"logprobs":null,"finish_reason":null}],"usage":null}\n\n`;
    events.push(Buffer.from(event));
    total += event.length;
  }
  events.push(Buffer.from(`data: {"id":"chatcmpl-9AbCdEfGhIj","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":371,"total_tokens":${SSE_TOTAL_TOKENS}}}\n\n`));
  events.push(Buffer.from("data: [DONE]\n\n"));
  return events;
}

const SSE_EVENTS = sseEvents();
export const SSE_BYTES = SSE_EVENTS.reduce((n, e) => n + e.length, 0);

function writeSse(res) {
  res.writeHead(200, SSE_HEADERS);
  let next = 0;
  const pump = () => {
    if (res.destroyed) return;
    if (next === SSE_EVENTS.length) {
      res.end();
      return;
    }
    const ok = res.write(SSE_EVENTS[next++]);
    if (ok) setImmediate(pump);
    else res.once("drain", pump);
  };
  pump();
}

function serve(port, host) {
  const server = createServer((req, res) => {
    req.on("data", () => {});
    req.on("error", () => {});
    req.on("end", () => {
      if (res.destroyed) return;
      if (req.url.startsWith("/__echo")) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(req.headers));
        return;
      }
      if (req.url.startsWith("/sse/")) {
        writeSse(res);
        return;
      }
      // 201 for an upload, as a store would answer; the gateway commits on any 2xx.
      res.writeHead(req.method === "PUT" ? 201 : 200, HEADERS);
      res.end(BODY);
    });
  });
  server.keepAliveTimeout = 30_000;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}

await serveOnThisThread("bench-origin", async (port, host) => ({ server: await serve(port, host) }));

/** Starts the origin on its own thread; resolves {port, close()}. */
export function startOriginThread(options) {
  return startServerThread(new URL(import.meta.url), "bench-origin", options);
}

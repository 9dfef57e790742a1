// The streams bench's origin: a WebSocket echo (every message back, same
// type) on its own thread, as fast as `ws` can, so the gateway's own cost is
// what the figures show. Binds 127.0.0.1 only.
import { createServer } from "node:http";
import { WebSocketServer } from "ws";
import { serveOnThisThread, startServerThread } from "./server-thread.mjs";

function serve(port, host) {
  const server = createServer((req, res) => {
    res.writeHead(426, { "content-type": "text/plain" });
    res.end("WebSocket only");
  });
  // No compression either way: the gateway does not negotiate it with the origin, so a direct client should not either.
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on("connection", (ws) => {
    ws.on("error", () => {});
    ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve({ server, wss }));
  });
}

await serveOnThisThread("bench-ws-origin", async (port, host) => {
  const { server, wss } = await serve(port, host);
  return { server, beforeClose: () => wss.clients.forEach((ws) => ws.terminate()) };
});

/** Starts the echo on its own thread; resolves {port, close()}. */
export function startWsOriginThread(options) {
  return startServerThread(new URL(import.meta.url), "bench-ws-origin", options);
}

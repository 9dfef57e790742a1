// The streams bench's origin: a WebSocket echo (every message back, same
// type) on its own thread, as fast as `ws` can, so the gateway's own cost is
// what the figures show. Binds 127.0.0.1 only.
import { createServer } from "node:http";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { WebSocketServer } from "ws";

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

if (!isMainThread && workerData?.role === "bench-ws-origin") {
  const { server, wss } = await serve(workerData.port, workerData.host);
  parentPort.postMessage({ port: server.address().port });
  parentPort.on("message", (msg) => {
    if (msg === "close") {
      for (const ws of wss.clients) ws.terminate();
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
}

/** Starts the echo on its own thread; resolves {port, close()}. */
export function startWsOriginThread({ port = 0, host = "127.0.0.1" } = {}) {
  const worker = new Worker(new URL(import.meta.url), { workerData: { role: "bench-ws-origin", port, host } });
  return new Promise((resolve, reject) => {
    worker.once("error", reject);
    worker.once("message", (msg) => {
      resolve({
        port: msg.port,
        close: () =>
          new Promise((done) => {
            worker.once("exit", () => done());
            worker.postMessage("close");
            setTimeout(() => void worker.terminate(), 2000).unref();
          }),
      });
    });
  });
}

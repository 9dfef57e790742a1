// The bench's origin: answers every request with the same 2-byte body as fast
// as Node can, after reading (and discarding) any request body. A fast origin
// makes the gateway's own cost visible. Binds 127.0.0.1 only.
//
// Run on its own thread (startOriginThread) so the load generator's event
// loop never delays it.
import { createServer } from "node:http";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

const BODY = Buffer.from("ok");
const HEADERS = { "content-type": "text/plain", "content-length": String(BODY.length) };

function serve(port, host) {
  const server = createServer((req, res) => {
    req.on("data", () => {});
    req.on("error", () => {});
    req.on("end", () => {
      if (res.destroyed) return;
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

if (!isMainThread && workerData?.role === "bench-origin") {
  const server = await serve(workerData.port, workerData.host);
  parentPort.postMessage({ port: server.address().port });
  parentPort.on("message", (msg) => {
    if (msg === "close") {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
}

/** Starts the origin on its own thread; resolves {port, close()}. */
export function startOriginThread({ port = 0, host = "127.0.0.1" } = {}) {
  const worker = new Worker(new URL(import.meta.url), { workerData: { role: "bench-origin", port, host } });
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

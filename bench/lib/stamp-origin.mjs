// The global-limits bench's origin, on its own thread: answers every request
// with a 2-byte body and records when it arrived (Unix ms, to 0.01 ms), by
// the `x-bench-run` header the load sets. The gateway forwards a request the
// moment it admits it, so these stamps are admission times plus a forwarding
// delay of about a millisecond. Binds 127.0.0.1 only; bounded per run.
import { createServer } from "node:http";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

const MAX_STAMPS_PER_RUN = 100_000;
const BODY = Buffer.from("ok");

if (!isMainThread && workerData?.role === "stamp-origin") {
  const stamps = new Map();
  const server = createServer((req, res) => {
    const at = performance.timeOrigin + performance.now();
    const run = String(req.headers["x-bench-run"] ?? "");
    let list = stamps.get(run);
    if (list === undefined) stamps.set(run, (list = []));
    if (list.length < MAX_STAMPS_PER_RUN) list.push(at);
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/plain", "content-length": "2" });
      res.end(BODY);
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, "127.0.0.1", () => parentPort.postMessage({ port: server.address().port }));
  parentPort.on("message", (msg) => {
    if (msg?.stamps !== undefined) parentPort.postMessage({ stamps: stamps.get(msg.stamps) ?? [] });
    if (msg === "close") {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
}

/** Starts the origin; resolves {port, stampsOf(run), close()}. */
export function startStampOrigin() {
  const worker = new Worker(new URL(import.meta.url), { workerData: { role: "stamp-origin" } });
  return new Promise((resolve, reject) => {
    worker.once("error", reject);
    worker.once("message", (msg) => {
      resolve({
        port: msg.port,
        stampsOf: (run) =>
          new Promise((done) => {
            const listen = (m) => {
              if (m.stamps === undefined) return;
              worker.off("message", listen);
              done(m.stamps);
            };
            worker.on("message", listen);
            worker.postMessage({ stamps: run });
          }),
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

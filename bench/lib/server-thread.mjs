// A bench server on a thread of its own, so the load generator's event loop
// never delays it. The module that defines the server calls
// serveOnThisThread(role, start) at its top level (it does nothing on the
// main thread) and exports a starter built on startServerThread(url, role).
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

/**
 * On the thread started for `role`: `start(port, host)` resolves to
 * { server, beforeClose? }; the thread answers its port, and on "close" runs
 * beforeClose, drops every connection and exits.
 */
export async function serveOnThisThread(role, start) {
  if (isMainThread || workerData?.role !== role) return;
  const { server, beforeClose } = await start(workerData.port, workerData.host);
  parentPort.postMessage({ port: server.address().port });
  parentPort.on("message", (msg) => {
    if (msg !== "close") return;
    beforeClose?.();
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

/** Starts `moduleUrl` on a thread as `role`; resolves {port, close()} (close waits at most 2 s, then terminates the thread). */
export function startServerThread(moduleUrl, role, { port = 0, host = "127.0.0.1" } = {}) {
  const worker = new Worker(moduleUrl, { workerData: { role, port, host } });
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

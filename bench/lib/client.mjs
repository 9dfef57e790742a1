// The harness's side of client-thread.mjs: run(spec) posts one load to the
// thread and resolves its figures; each load is bounded (a count or a
// duration) and, past a generous limit, fails instead of hanging.
import { Worker } from "node:worker_threads";
import { onCleanup } from "./cleanup.mjs";

const LIMIT_S = 120;

/** Starts the client thread: {run(spec), close()}. */
export function startClient() {
  const worker = new Worker(new URL("./client-thread.mjs", import.meta.url));
  const pending = new Map();
  let nextId = 1;
  worker.on("message", (msg) => {
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error) p?.reject(new Error(msg.error));
    else p?.resolve(msg);
  });
  worker.on("error", (err) => {
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  });
  const unregister = onCleanup(() => worker.terminate());
  return {
    run: (spec) =>
      new Promise((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`a load (${spec.mode} ${spec.path}) did not finish in ${LIMIT_S} s`));
        }, LIMIT_S * 1000);
        pending.set(id, { resolve: (v) => (clearTimeout(timer), resolve(v)), reject: (e) => (clearTimeout(timer), reject(e)) });
        worker.postMessage({ ...spec, id });
      }),
    close: async () => {
      unregister();
      worker.postMessage("close");
      await new Promise((resolve) => setTimeout(resolve, 50));
      await worker.terminate();
    },
  };
}

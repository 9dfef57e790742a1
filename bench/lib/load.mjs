// Runs a bounded load (a duration or an amount, never open-ended) on its own
// thread and resolves its summary: closed loop with autocannon
// (load-thread.mjs) or open loop at a fixed rate (paced-thread.mjs).
import { Worker } from "node:worker_threads";
import { onCleanup } from "./cleanup.mjs";

/** Extra seconds past a load's expected length before its thread is terminated. */
const GRACE_S = 30;

/**
 * Closed loop (autocannon, load-thread.mjs): spec {url, kind:
 * "get"|"upload"|"flood"|"tokens", connections, durationS | amount, path?, headers?,
 * prefix?, bodyBytes?, names?, keyShape?, tokens?, label?, maxS?}.
 * Open loop at a fixed rate (paced-thread.mjs) when spec.ratePerS is set:
 * {url, kind: "get"|"upload", ratePerS, durationS, warmupS?, path?, headers?,
 * prefix?, bodyBytes?, maxSockets?, keepSlowMs?}.
 * Returns {done: Promise<summary>, stop()}.
 */
export function startLoad(spec) {
  const file = spec.ratePerS ? "./paced-thread.mjs" : "./load-thread.mjs";
  const worker = new Worker(new URL(file, import.meta.url), { workerData: spec });
  const unregister = onCleanup(() => worker.terminate());
  const limitS = (spec.maxS ?? spec.durationS ?? 60) + GRACE_S;
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new Error(`load ${spec.label ?? spec.kind} did not finish within ${limitS} s`));
    }, limitS * 1000);
    worker.once("message", (msg) => {
      clearTimeout(timer);
      unregister();
      void worker.terminate();
      if (msg.error) reject(new Error(`load ${spec.label ?? spec.kind}: ${msg.error}`));
      else resolve(msg);
    });
    worker.once("error", (err) => {
      clearTimeout(timer);
      unregister();
      reject(err);
    });
  });
  return { done, stop: () => worker.postMessage("stop") };
}

export function runLoad(spec) {
  return startLoad(spec).done;
}

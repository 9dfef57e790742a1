// A Worker's inspector (Miniflare's inspectorPort), through the Chrome
// DevTools protocol: a CPU profile while it serves a load (sampling perturbs
// timings a little; the shares it reports are what matter), and its JS heap
// after a forced GC.
import { WebSocketClient } from "./instances.mjs";

async function inspectorTarget(inspectorPort, name) {
  const res = await fetch(`http://127.0.0.1:${inspectorPort}/json`);
  const targets = await res.json();
  const target = targets.find((t) => t.id?.includes(name) || t.title?.includes(name) || t.webSocketDebuggerUrl?.includes(name)) ?? targets[0];
  if (!target) throw new Error(`no inspector target on port ${inspectorPort}`);
  return target.webSocketDebuggerUrl ?? `ws://127.0.0.1:${inspectorPort}/${target.id}`;
}

function connect(url) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocketClient(url);
    let nextId = 1;
    const pending = new Map();
    ws.on("message", (data) => {
      const msg = JSON.parse(String(data));
      if (msg.id !== undefined && pending.has(msg.id)) {
        const { ok, fail } = pending.get(msg.id);
        pending.delete(msg.id);
        if (msg.error) fail(new Error(`${msg.error.message}`));
        else ok(msg.result);
      }
    });
    ws.once("error", reject);
    ws.once("open", () =>
      resolve({
        send: (method, params = {}) =>
          new Promise((ok, fail) => {
            const id = nextId++;
            pending.set(id, { ok, fail });
            ws.send(JSON.stringify({ id, method, params }));
          }),
        close: () => ws.close(),
      }),
    );
  });
}

/** Opens an inspector session on the Worker `name`: {send(method, params), close()}. */
export async function inspect(inspectorPort, name) {
  return connect(await inspectorTarget(inspectorPort, name));
}

/**
 * The Worker isolate's JS heap after a full GC: {used_bytes, total_bytes}.
 * workerd's inspector does not answer HeapProfiler.collectGarbage, but a heap
 * snapshot starts with a full GC; its chunks are discarded.
 */
export async function heapAfterGc(session) {
  await session.send("HeapProfiler.enable");
  await session.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
  const usage = await session.send("Runtime.getHeapUsage");
  return { used_bytes: usage.usedSize, total_bytes: usage.totalSize };
}

/** Profiles `name` (on inspectorPort) while `during()` runs; returns the raw profile. */
export async function profileWhile(inspectorPort, name, during, samplingIntervalUs = 100) {
  const session = await connect(await inspectorTarget(inspectorPort, name));
  try {
    await session.send("Profiler.enable");
    await session.send("Profiler.setSamplingInterval", { interval: samplingIntervalUs });
    await session.send("Profiler.start");
    const result = await during();
    const { profile } = await session.send("Profiler.stop");
    return { profile, result };
  } finally {
    session.close();
  }
}

/** "name (file:line)"; frames of the bundle are mapped back to their source (src/… or node_modules/…) through its source map. */
function frameKey(f, sourceMap, bundleFile) {
  const name = f.functionName || "(anonymous)";
  if (!f.url) return `${name} (native)`;
  if (sourceMap && f.url.endsWith(bundleFile)) {
    const entry = sourceMap.findEntry(f.lineNumber, f.columnNumber);
    if (entry?.originalSource) {
      const source = entry.originalSource.replace(/^.*?(?=(src|node_modules)\/)/, "").replace(/^.*node_modules\//, "");
      return `${name} (${source}:${entry.originalLine + 1})`;
    }
  }
  return `${name} (${f.url.split("/").pop()}:${f.lineNumber + 1})`;
}

/**
 * Where a profile's busy time goes: self time by function, and the split
 * between the Worker's own JavaScript (the bundle), the runtime's native code
 * and the garbage collector. Shares are of busy samples (idle excluded).
 * (Inclusive time is left out: across awaits, V8's stacks attribute resumed
 * continuations to whichever middleware resumed them, which misleads.)
 */
export function summariseProfile(profile, bundleFile, sourceMap = null, limit = 15) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfCount = new Map();
  for (const id of profile.samples) selfCount.set(id, (selfCount.get(id) ?? 0) + 1);
  const self = new Map();
  let idle = 0;
  let busy = 0;
  let gc = 0;
  let bundle = 0;
  for (const [id, count] of selfCount) {
    const f = byId.get(id).callFrame;
    if (f.functionName === "(idle)" || f.functionName === "(program)" || f.functionName === "(root)") {
      idle += count;
      continue;
    }
    busy += count;
    if (f.functionName === "(garbage collector)") gc += count;
    if (f.url.endsWith(bundleFile)) bundle += count;
    const key = frameKey(f, sourceMap, bundleFile);
    self.set(key, (self.get(key) ?? 0) + count);
  }
  const share = (n) => Math.round((n / busy) * 1000) / 1000;
  const top = (map) => [...map].sort((x, y) => y[1] - x[1]).slice(0, limit).map(([fn, n]) => ({ function: fn, share: share(n) }));
  return {
    samples: profile.samples.length,
    idle_share_of_all: Math.round((idle / profile.samples.length) * 1000) / 1000,
    busy_split: { worker_javascript: share(bundle), garbage_collector: share(gc), runtime_native_and_other: share(busy - bundle - gc) },
    top_self: top(self),
  };
}

// Everything the bench starts is registered here and stopped on the way out:
// on a normal end, on an error, on Ctrl-C (SIGINT), SIGTERM and SIGHUP. The
// workerd processes behind each Miniflare instance are also tracked by pid,
// so even an abrupt exit kills them (synchronously, in the 'exit' hook).
import { readdirSync, readFileSync } from "node:fs";

const disposers = [];
const pids = new Set();
let cleaning = null;

/** Registers an async stop function; returns a function that unregisters it. */
export function onCleanup(stop) {
  disposers.push(stop);
  return () => {
    const i = disposers.indexOf(stop);
    if (i >= 0) disposers.splice(i, 1);
  };
}

export function trackPid(pid) {
  pids.add(pid);
}

export function untrackPid(pid) {
  pids.delete(pid);
}

/** Child processes of this process whose command name is `name` (read from /proc). */
export function childPids(name) {
  const out = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    // "pid (comm) state ppid ...": comm may hold spaces, so split after the last ')'.
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    const ppid = Number(stat.slice(close + 2).split(" ")[1]);
    if (ppid === process.pid && comm === name) out.push(Number(entry));
  }
  return out;
}

function killTrackedSync() {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  pids.clear();
}

/** Runs every registered stop function, newest first, each bounded to 10 s. */
export function cleanupAll() {
  cleaning ??= (async () => {
    while (disposers.length > 0) {
      const stop = disposers.pop();
      await Promise.race([
        Promise.resolve().then(stop).catch(() => {}),
        new Promise((resolve) => setTimeout(resolve, 10_000).unref()),
      ]);
    }
    killTrackedSync();
  })();
  return cleaning;
}

process.on("exit", killTrackedSync);
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    console.error(`\n${signal}: stopping every process the bench started…`);
    void cleanupAll().finally(() => process.exit(130));
  });
}

// CPU time of a process, read from /proc: the figure the gateway's cost is
// measured in. Time a process spends waiting for a core that other jobs hold
// is not counted, so on a shared machine CPU time per request moves far less
// than requests per second (a closed-loop rate halves when another job takes
// half the cores; the CPU each request needs does not).
//
// Two sources, read together:
// - /proc/<pid>/task/<tid>/schedstat: nanoseconds on a CPU, per thread (the
//   precise figure; a thread that ends takes its time with it);
// - /proc/<pid>/stat utime + stime: clock ticks (10 ms here) for the whole
//   process, ended threads included (the check that no thread's time went
//   missing).
import { readdirSync, readFileSync } from "node:fs";

/** Linux's USER_HZ: /proc reports utime and stime in these ticks. */
const TICKS_PER_S = 100;

/** {schedNs, statNs, tids}: the CPU time of every thread of `pid` so far. */
export function processCpu(pid) {
  let schedNs = 0;
  const tids = [];
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      schedNs += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
      tids.push(tid);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // "pid (comm) state ppid …": comm may hold spaces, so count fields after the last ')'. utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { schedNs, statNs: (ticks * 1e9) / TICKS_PER_S, tids: tids.sort().join(",") };
}

/**
 * CPU time `pid` used between two processCpu() readings, in ns: the
 * per-thread figure when the same threads were there at both ends, else the
 * whole-process ticks (coarser, but nothing missing).
 */
export function cpuBetween(before, after) {
  if (before.tids === after.tids) return { ns: after.schedNs - before.schedNs, source: "schedstat" };
  return { ns: after.statNs - before.statNs, source: "stat" };
}

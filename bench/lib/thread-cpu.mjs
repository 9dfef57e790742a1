// CPU time of workerd's isolate thread, read from /proc: what a request
// costs the thread that runs the Worker's JavaScript, in the unit Workers
// bill. workerd runs every isolate of a process on its main thread (the
// thread whose id is the process's); V8's helper threads (concurrent GC
// marking, compilers) are other threads of the process and are not added
// in: their work runs beside the isolate, not in its time. Two readings of
// the same thread:
// - /proc/<pid>/task/<tid>/schedstat: nanoseconds on a CPU (the figure),
//   and nanoseconds spent runnable but waiting for the CPU (another process
//   held it: the machine was not idle);
// - /proc/<pid>/task/<tid>/stat utime + stime: clock ticks (10 ms), the
//   coarse check that the two agree over a run.
import { readdirSync, readFileSync } from "node:fs";

/** Linux's USER_HZ: /proc reports utime and stime in these ticks. */
const TICKS_PER_S = 100;

/** The isolate's thread of a workerd process: its main thread, checked by name. */
export function isolateThread(pid) {
  const comm = readFileSync(`/proc/${pid}/task/${pid}/comm`, "utf8").trim();
  if (comm !== "workerd") throw new Error(`thread ${pid} of workerd is "${comm}", not workerd's main thread`);
  return pid;
}

/** {ns, waitNs, ticksNs}: the thread's CPU time so far, its time waiting for a CPU, and its CPU time from ticks. */
export function threadCpu(pid, tid) {
  const [ns, waitNs] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ").map(Number);
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
  // "tid (comm) state …": comm may hold spaces, so count fields after the last ')'. utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { ns, waitNs, ticksNs: ((Number(fields[11]) + Number(fields[12])) * 1e9) / TICKS_PER_S };
}

/** CPU ns of every thread of `pid` by thread name (threads of one name summed): where a process's time goes. */
export function threadsByName(pid) {
  const out = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = tid === String(pid) ? "isolate (main)" : readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      out[name] = (out[name] ?? 0) + Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

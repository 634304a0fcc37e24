/**
 * CPU-seconds of processes from /proc (utime + stime), for the benches that say which process
 * pays for the work: on a busy machine their wall-clock figures are noise, CPU is not.
 */
import { readdirSync, readFileSync } from "node:fs";

const CLK_TCK = 100;

/**
 * utime + stime of a process, in seconds; with `children`, plus those of the children it has
 * waited for (a shell's `cat` once it ended). 0 once the process is gone.
 */
export function cpuSeconds(pid: number | undefined, children = false): number {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields 14-17 of proc(5), counted after the comm field (which may hold spaces).
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const own = Number(f[11]) + Number(f[12]);
    return (children ? own + Number(f[13]) + Number(f[14]) : own) / CLK_TCK;
  } catch {
    return 0;
  }
}

/**
 * utime + stime of a process's V8 helper threads (comm "V8Worker": concurrent marking and sweeping
 * of the garbage collector, and background compilation), in seconds.
 */
export function v8WorkerSeconds(pid: number | undefined): number {
  if (!pid) return 0;
  let ticks = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        if (stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) !== "V8Worker") continue;
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // the thread ended between readdir and read
      }
    }
  } catch {
    return 0;
  }
  return ticks / CLK_TCK;
}

/** The nats-server listening on `port` (its command line names the port). */
export function natsServerPid(port: number): number | undefined {
  for (const d of readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, "utf8").split("\0");
      if (/(^|\/)nats-server$/.test(argv[0] ?? "") && argv.includes(String(port))) return Number(d);
    } catch {
      // exited between readdir and read
    }
  }
  return undefined;
}

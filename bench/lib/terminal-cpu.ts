/**
 * CPU accounting for `npm run bench -- terminal`: CPU-seconds of each process the terminal's bytes
 * pass through, of their V8 helper threads, the part spent in the kernel and the page faults (a
 * process that keeps allocating fresh large buffers pays for the kernel zeroing their pages).
 */
import { readFileSync } from "node:fs";
import { cpuSeconds, v8WorkerSeconds } from "./proc-cpu.js";

type Watched = { pid: number | undefined; children?: boolean };

const CLK_TCK = 100;

/** Kernel CPU-seconds and minor page faults of a process (with `children`, plus its waited-for children's). */
function kernelUse(p: Watched): { sys: number; faults: number } {
  if (!p.pid) return { sys: 0, faults: 0 };
  try {
    const stat = readFileSync(`/proc/${p.pid}/stat`, "utf8");
    // proc(5) fields 10 (minflt), 11 (cminflt), 15 (stime), 17 (cstime), counted after the comm field.
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const sys = (Number(f[12]) + (p.children ? Number(f[14]) : 0)) / CLK_TCK;
    const faults = Number(f[7]) + (p.children ? Number(f[8]) : 0);
    return { sys, faults };
  } catch {
    return { sys: 0, faults: 0 };
  }
}

/** Snapshots CPU-seconds of named processes; `since` gives what each used after the snapshot. */
export function cpuMeter(pids: Record<string, Watched>) {
  const read = (f: (p: Watched) => number) => Object.fromEntries(Object.entries(pids).map(([name, p]) => [name, f(p)]));
  const total = () => read((p) => cpuSeconds(p.pid, p.children));
  const workers = () => read((p) => v8WorkerSeconds(p.pid));
  const sys = () => read((p) => kernelUse(p).sys);
  const faults = () => read((p) => kernelUse(p).faults);
  const start = { total: total(), workers: workers(), sys: sys(), faults: faults() };
  const diff = (now: Record<string, number>, then: Record<string, number>) =>
    Object.fromEntries(Object.entries(now).map(([name, s]) => [name, Math.max(0, s - then[name]!)]));
  return {
    /**
     * CPU-seconds of each process since the snapshot, the part its V8 helper threads used, the
     * part spent in the kernel, and its minor page faults.
     */
    since(): {
      total: Record<string, number>;
      v8Workers: Record<string, number>;
      sys: Record<string, number>;
      faults: Record<string, number>;
    } {
      return {
        total: diff(total(), start.total),
        v8Workers: diff(workers(), start.workers),
        sys: diff(sys(), start.sys),
        faults: diff(faults(), start.faults),
      };
    },
  };
}

/**
 * CPU accounting for `npm run bench -- terminal`: CPU-seconds of each process the terminal's bytes
 * pass through, and of their V8 helper threads.
 */
import { cpuSeconds, v8WorkerSeconds } from "./proc-cpu.js";

type Watched = { pid: number | undefined; children?: boolean };

/** Snapshots CPU-seconds of named processes; `since` gives what each used after the snapshot. */
export function cpuMeter(pids: Record<string, Watched>) {
  const read = (f: (p: Watched) => number) => Object.fromEntries(Object.entries(pids).map(([name, p]) => [name, f(p)]));
  const total = () => read((p) => cpuSeconds(p.pid, p.children));
  const workers = () => read((p) => v8WorkerSeconds(p.pid));
  const start = { total: total(), workers: workers() };
  const diff = (now: Record<string, number>, then: Record<string, number>) =>
    Object.fromEntries(Object.entries(now).map(([name, s]) => [name, Math.max(0, s - then[name]!)]));
  return {
    /** CPU-seconds of each process since the snapshot, and the part its V8 helper threads used. */
    since(): { total: Record<string, number>; v8Workers: Record<string, number> } {
      return { total: diff(total(), start.total), v8Workers: diff(workers(), start.workers) };
    },
  };
}

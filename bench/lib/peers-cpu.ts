/**
 * CPU accounting for the peers bench: utime+stime of live processes (/proc/<pid>/stat), and a
 * shell command run with the CPU of its whole reaped process tree (bash's `times`).
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const TICKS = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime + stime of a live process in seconds, or undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / TICKS;
  } catch {
    return undefined;
  }
}

/** Pids whose command line contains every one of `parts` (e.g. a postgres backend of one database). */
export function pidsMatching(parts: string[]): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8").replaceAll("\0", " ");
      if (parts.every((p) => cmd.includes(p))) out.push(Number(d));
    } catch {}
  }
  return out;
}

export type CpuSnapshot = Map<number, number>;

export function snapshot(pids: number[]): CpuSnapshot {
  const m: CpuSnapshot = new Map();
  for (const p of pids) {
    const s = cpuSeconds(p);
    if (s !== undefined) m.set(p, s);
  }
  return m;
}

/** CPU-s used between two snapshots; a pid first seen in `after` counts from zero. */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot): number {
  let sum = 0;
  for (const [pid, s] of after) sum += s - (before.get(pid) ?? 0);
  return sum;
}

/** Parses bash's `times` output: the second line holds the reaped children's user and system time. */
export function parseTimes(text: string): number {
  const line = text.trim().split("\n")[1] ?? "";
  const parts = [...line.matchAll(/(\d+)m([\d.]+)s/g)];
  if (parts.length !== 2) throw new Error(`unexpected output of times: ${JSON.stringify(text)}`);
  return parts.reduce((s, m) => s + Number(m[1]) * 60 + Number(m[2]), 0);
}

export interface Measured {
  code: number;
  wallS: number;
  cpuS: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `script` under bash and returns the CPU of every process it (transitively) waited for;
 * tools that reap their workers (ansible's forks, xargs' puppets) are counted whole.
 */
export async function runMeasured(script: string, env: Record<string, string>, cwd: string): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), "peers-times-"));
  const timesFile = join(dir, "times");
  const wrapped = `( ${script} ); rc=$?; times > '${timesFile}'; exit $rc`;
  const t0 = performance.now();
  const child = spawn("bash", ["-c", wrapped], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on("data", (d: Buffer) => out.push(d));
  child.stderr.on("data", (d: Buffer) => err.push(d));
  const code = await new Promise<number>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (c) => resolve(c ?? 1));
  });
  const wallS = (performance.now() - t0) / 1000;
  try {
    const cpuS = parseTimes(readFileSync(timesFile, "utf8"));
    return { code, wallS, cpuS, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

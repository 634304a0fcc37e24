import { type ChildProcessByStdio, spawn } from "node:child_process";
import type { Readable } from "node:stream";

/** Per-stream capture limit: enough for any sane script log, bounded so a runaway command cannot exhaust the agent. */
export const OUTPUT_CAP = 1024 * 1024;

export interface RunOptions {
  cwd?: string | undefined;
  /** Added to the agent's environment. */
  env?: Record<string, string> | undefined;
  timeoutMs: number;
  cap?: number;
}

export interface RunResult {
  /** Exit code; null when killed by a signal or when the process could not start. */
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** Set when the process could not be started (ENOENT, bad cwd). */
  spawnError?: string;
}

class Capture {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;
  constructor(private readonly cap: number) {}
  push(b: Buffer): void {
    const room = this.cap - this.size;
    if (room <= 0) {
      this.dropped += b.length;
      return;
    }
    const keep = b.length <= room ? b : b.subarray(0, room);
    this.chunks.push(keep);
    this.size += keep.length;
    this.dropped += b.length - keep.length;
  }
  text(): string {
    const s = Buffer.concat(this.chunks).toString("utf8");
    return this.dropped ? `${s}\n[output truncated: ${this.dropped} more bytes not captured]\n` : s;
  }
}

/**
 * Runs a program in its own process group with stdin closed. On timeout the whole group is killed
 * (SIGTERM, then SIGKILL after a grace period) so a shell's children do not outlive it.
 */
export function run(file: string, args: string[], opts: RunOptions): Promise<RunResult> {
  const cap = opts.cap ?? OUTPUT_CAP;
  const out = new Capture(cap);
  const err = new Capture(cap);
  return new Promise((resolve) => {
    let child: ChildProcessByStdio<null, Readable, Readable>;
    try {
      child = spawn(file, args, {
        cwd: opts.cwd,
        env: { ...process.env, ...opts.env },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
    } catch (e) {
      resolve({ code: null, signal: null, stdout: "", stderr: "", timedOut: false, spawnError: (e as Error).message });
      return;
    }
    let timedOut = false;
    let settled = false;
    const killGroup = (sig: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // the group is already gone
      }
    };
    let hardKill: NodeJS.Timeout | undefined;
    const timer = setTimeout(
      () => {
        timedOut = true;
        killGroup("SIGTERM");
        hardKill = setTimeout(() => killGroup("SIGKILL"), 2000);
      },
      Math.max(0, opts.timeoutMs),
    );
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => err.push(b));
    const finish = (code: number | null, signal: string | null, spawnError?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (timedOut) killGroup("SIGKILL"); // whatever survived SIGTERM in the group
      if (hardKill) clearTimeout(hardKill);
      resolve({
        code,
        signal,
        stdout: out.text(),
        stderr: err.text(),
        timedOut,
        ...(spawnError ? { spawnError } : {}),
      });
    };
    child.once("error", (e) => finish(null, null, e.message));
    child.once("exit", (code, signal) => {
      // A background child (`cmd &`) may keep the pipes open after the shell exits: wait briefly
      // for the remaining output, then stop reading rather than hang until it ends.
      const late = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code, signal);
      }, 500);
      child.once("close", () => {
        clearTimeout(late);
        finish(code, signal);
      });
    });
  });
}

/** Milliseconds left before `deadline`, capped at `ms`. */
export const budget = (ms: number, deadline: number) => Math.max(0, Math.min(ms, deadline - Date.now()));

import { type ChildProcessByStdio, spawn } from "node:child_process";
import type { Readable } from "node:stream";

/** Per-stream capture limit: enough for any sane script log, bounded so a runaway command cannot exhaust the agent. */
export const OUTPUT_CAP = 1024 * 1024;
/** How long the group gets between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2000;

export type OutputStream = "stdout" | "stderr";

export interface RunOptions {
  cwd?: string | undefined;
  /** Added to the agent's environment. */
  env?: Record<string, string> | undefined;
  timeoutMs: number;
  cap?: number;
  /** Every chunk as it is read, before any cap (fleet commands stream it). Must not throw. */
  onOutput?: ((stream: OutputStream, chunk: Buffer) => void) | undefined;
  /** Abort = cancel: the group gets the same SIGTERM → SIGKILL as on timeout. */
  signal?: AbortSignal | undefined;
}

export interface RunResult {
  /** Exit code; null when killed by a signal or when the process could not start. */
  code: number | null;
  signal: string | null;
  /** Captured output as text, with a truncation note (what resource results show). */
  stdout: string;
  stderr: string;
  /** The captured bytes themselves, at most `cap` each, and whether more were dropped. */
  stdoutBytes: Buffer;
  stderrBytes: Buffer;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timedOut: boolean;
  /** `signal` was aborted while it ran (or before it started: then it never did). */
  cancelled: boolean;
  /** Spawn to exit; 0 when it never started. */
  durationMs: number;
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
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
  truncated(): boolean {
    return this.dropped > 0;
  }
  text(): string {
    const s = this.bytes().toString("utf8");
    return this.dropped ? `${s}\n[output truncated: ${this.dropped} more bytes not captured]\n` : s;
  }
}

type Ending = { code: number | null; signal: string | null; spawnError?: string; durationMs: number };

function result(out: Capture, err: Capture, e: Ending, flags: { timedOut: boolean; cancelled: boolean }): RunResult {
  return {
    code: e.code,
    signal: e.signal,
    stdout: out.text(),
    stderr: err.text(),
    stdoutBytes: out.bytes(),
    stderrBytes: err.bytes(),
    stdoutTruncated: out.truncated(),
    stderrTruncated: err.truncated(),
    timedOut: flags.timedOut,
    cancelled: flags.cancelled,
    durationMs: e.durationMs,
    ...(e.spawnError ? { spawnError: e.spawnError } : {}),
  };
}

/**
 * Runs a program in its own process group with stdin closed. On timeout or abort the whole group
 * is killed (SIGTERM, then SIGKILL after a grace period) so a shell's children do not outlive it.
 * The one process runner of the agent: exec resources, package managers and fleet commands.
 */
export function run(file: string, args: string[], opts: RunOptions): Promise<RunResult> {
  const cap = opts.cap ?? OUTPUT_CAP;
  const out = new Capture(cap);
  const err = new Capture(cap);
  return new Promise((resolve) => {
    if (opts.signal?.aborted) {
      resolve(result(out, err, { code: null, signal: null, durationMs: 0 }, { timedOut: false, cancelled: true }));
      return;
    }
    let child: ChildProcessByStdio<null, Readable, Readable>;
    const started = performance.now();
    try {
      child = spawn(file, args, {
        cwd: opts.cwd,
        env: { ...process.env, ...opts.env },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
    } catch (e) {
      const ending = { code: null, signal: null, spawnError: (e as Error).message, durationMs: 0 };
      resolve(result(out, err, ending, { timedOut: false, cancelled: false }));
      return;
    }
    let timedOut = false;
    let cancelled = false;
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
    const stop = (why: "timeout" | "cancel") => {
      if (settled || timedOut || cancelled) return;
      if (why === "timeout") timedOut = true;
      else cancelled = true;
      killGroup("SIGTERM");
      hardKill = setTimeout(() => killGroup("SIGKILL"), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => stop("timeout"), Math.max(0, opts.timeoutMs));
    const onAbort = () => stop("cancel");
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    const onData = (stream: OutputStream, capture: Capture) => (b: Buffer) => {
      if (settled) return;
      capture.push(b);
      opts.onOutput?.(stream, b);
    };
    child.stdout.on("data", onData("stdout", out));
    child.stderr.on("data", onData("stderr", err));
    const finish = (code: number | null, signal: string | null, spawnError?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
      if (timedOut || cancelled) killGroup("SIGKILL"); // whatever survived SIGTERM in the group
      if (hardKill) clearTimeout(hardKill);
      const durationMs = child.pid === undefined ? 0 : performance.now() - started;
      const ending = { code, signal, durationMs, ...(spawnError ? { spawnError } : {}) };
      resolve(result(out, err, ending, { timedOut, cancelled }));
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

import { closeSync, constants, openSync } from "node:fs";
import pty from "node-pty";
import type { AgentLogger } from "../runtime.js";
import { encodeControl, parseControl, termSubject, type ControlMessage } from "./control.js";
import { signalSession } from "./process-tree.js";

export interface SessionBus {
  publish(subject: string, data: Uint8Array): void;
  subscribe(subject: string, onMessage: (data: Uint8Array) => void): () => void;
}

export interface SessionSpec {
  sessionId: string;
  shell: string;
  args: string[];
  cols: number;
  rows: number;
  cwd: string;
  env: Record<string, string>;
  heartbeatMs: number;
  orphanTimeoutMs: number;
  attachTimeoutMs: number;
  detachGraceMs: number;
}

export interface SessionTuning {
  /** Output is published when this many bytes are pending (also the largest message) ... */
  flushBytes: number;
  /**
   * ... or this long after the previous publish while output keeps coming. Output after a quiet
   * spell (a keystroke's echo, a prompt) is published at once.
   */
  flushDelayMs: number;
  /** Output held before the first attach beyond this pauses the PTY (the shell blocks, nothing is lost). */
  holdLimitBytes: number;
  /** Between SIGHUP and SIGKILL of the session's processes. */
  killGraceMs: number;
}

// Every message costs a gRPC frame, a NATS message, a WebSocket frame and a transcript line, so
// sustained output goes in large messages, but not larger than this: a message and its NATS header
// then fit in one 64 KiB socket read at the subscribers (gateway, recorder), which nats.js hands
// over as a view of that read. A larger one is rebuilt in a buffer grown copy by copy; with 256 KiB
// the path cost ~25 % more CPU per MiB (npm run bench -- terminal).
export const DEFAULT_TUNING: SessionTuning = {
  flushBytes: 60 * 1024,
  flushDelayMs: 4,
  holdLimitBytes: 1024 * 1024,
  killGraceMs: 2000,
};

/**
 * Output after a small publish is taken for interactive (a keystroke's echo after the previous
 * one) and need not wait for the batching window, unless it comes faster than a round trip
 * through the orchestrator could (a program writing small pieces in a tight loop).
 */
const INTERACTIVE_BYTES = 1024;
const INTERACTIVE_GAP_MS = 0.5;

/** Messages of flushBytes an output arena holds before it is replaced. */
const ARENA_FLUSHES = 4;

/**
 * Keeps our own handle on the PTY's slave side. Without it, when the shell exits the master reads
 * EIO as soon as the last slave handle closes and output still in the kernel's buffers (the tail of
 * a `cat`) is lost; with it, node-pty drains the master before it reports the exit.
 */
function holdSlave(term: unknown): number | undefined {
  const path = (term as { _pty?: unknown })._pty;
  if (typeof path !== "string" || !path.startsWith("/dev/")) return undefined;
  try {
    return openSync(path, constants.O_RDWR | constants.O_NOCTTY);
  } catch {
    return undefined;
  }
}

export interface PtySession {
  readonly id: string;
  readonly pid: number;
  /** Ends the session: SIGHUP to every process of the PTY's session, SIGKILL after a grace. */
  close(reason: string): void;
  readonly done: Promise<void>;
}

/**
 * One PTY bridged to `orch.term.<id>.*`: output batched onto `.out`, input from `.in`, control on
 * `.ctl`. Output is held until the first client attaches (so the first prompt is not lost to a
 * client still connecting); the recorder gets it then too.
 */
export function startSession(
  spec: SessionSpec,
  bus: SessionBus,
  log: AgentLogger,
  onEnd: () => void,
  tuning: SessionTuning = DEFAULT_TUNING,
): PtySession {
  const out = termSubject(spec.sessionId, "out");
  const ctl = termSubject(spec.sessionId, "ctl");
  const term = pty.spawn(spec.shell, spec.args, {
    name: "xterm-256color",
    cols: spec.cols,
    rows: spec.rows,
    cwd: spec.cwd,
    env: spec.env,
    encoding: null,
  });
  const slave = holdSlave(term);

  // Output waiting to be published: arena[start, end). Published messages are views of the arena
  // (the link serializes them later), so it is only appended to; a full arena is replaced and what
  // is pending moves over. One allocation per ARENA_FLUSHES messages instead of a concat per message.
  let arena = Buffer.allocUnsafe(0);
  let start = 0;
  let end = 0;
  let flushTimer: NodeJS.Timeout | undefined;
  let lastFlushAt = 0;
  let lastFlushBytes = 0;
  let held = true;
  let paused = false;
  let attached = 0;
  let ended = false;
  let closeReason = "";
  let lastKeepalive = Date.now();
  let detachTimer: NodeJS.Timeout | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));

  /** Publishes what is pending; with `whole`, only full flushBytes messages (the rest waits). */
  const flush = (whole = false) => {
    if (flushTimer) clearTimeout(flushTimer);
    flushTimer = undefined;
    const pendingBytes = end - start;
    if (held || pendingBytes === 0) return;
    const until = whole ? end - (pendingBytes % tuning.flushBytes) : end;
    lastFlushAt = performance.now();
    lastFlushBytes = until - start;
    // Bounded messages: NATS (1 MiB by default) and the link (16 MiB) allow more than this.
    for (let i = start; i < until; i += tuning.flushBytes)
      bus.publish(out, arena.subarray(i, Math.min(until, i + tuning.flushBytes)));
    start = until;
  };

  /** Appends output to the arena. */
  const take = (buf: Uint8Array, n: number) => {
    if (end + n > arena.length) {
      const pendingBytes = end - start;
      const next = Buffer.allocUnsafe(Math.max(ARENA_FLUSHES * tuning.flushBytes, 2 * (pendingBytes + n)));
      arena.copy(next, 0, start, end);
      arena = next;
      start = 0;
      end = pendingBytes;
    }
    arena.set(n === buf.length ? buf : buf.subarray(0, n), end);
    end += n;
    return end - start;
  };

  const release = () => {
    if (!held) return;
    held = false;
    if (paused) {
      paused = false;
      term.resume();
    }
    flush();
  };

  const onOutput = (buf: Uint8Array, n: number) => {
    const wasEmpty = end === start;
    const pendingBytes = take(buf, n);
    if (held) {
      if (pendingBytes > tuning.holdLimitBytes && !paused) {
        paused = true;
        term.pause();
      }
      return;
    }
    if (pendingBytes >= tuning.flushBytes) flush(true);
    if (end === start || flushTimer) return;
    const since = performance.now() - lastFlushAt;
    const interactive =
      since >= tuning.flushDelayMs || (lastFlushBytes < INTERACTIVE_BYTES && since >= INTERACTIVE_GAP_MS);
    if (wasEmpty && interactive) flush();
    else flushTimer = setTimeout(flush, tuning.flushDelayMs);
  };
  term.onData((chunk) => {
    const b = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as unknown as Buffer);
    onOutput(b, b.length);
  });

  const close = (reason: string) => {
    if (ended) return;
    closeReason ||= reason;
    release();
    signalSession(term.pid, "SIGHUP");
    killTimer ??= setTimeout(() => signalSession(term.pid, "SIGKILL"), tuning.killGraceMs);
    killTimer.unref();
  };

  const armDetach = () => {
    if (spec.detachGraceMs > 0 && !detachTimer && !ended)
      detachTimer = setTimeout(() => attached === 0 && close("detached"), spec.detachGraceMs);
  };

  const onControl = (m: ControlMessage) => {
    switch (m.type) {
      case "resize":
        if (!ended) term.resize(m.cols, m.rows);
        break;
      case "attach":
        attached++;
        if (detachTimer) clearTimeout(detachTimer);
        detachTimer = undefined;
        release();
        break;
      case "detach":
        attached = Math.max(0, attached - 1);
        if (attached === 0) armDetach();
        break;
      case "keepalive":
        lastKeepalive = Date.now();
        break;
      case "close":
        close(m.reason || "closed");
        break;
      case "ended":
        close(m.reason || "ended");
        break;
      default:
        break; // heartbeat and exit are ours; nothing to do
    }
  };

  const unsubIn = bus.subscribe(termSubject(spec.sessionId, "in"), (data) => {
    if (!ended) term.write(Buffer.from(data));
  });
  const unsubCtl = bus.subscribe(ctl, (data) => {
    const m = parseControl(data);
    if (m) onControl(m);
  });

  // Nobody attached while the ticket was valid: release the output (it is recorded) and let the
  // detach grace end a session no one will use.
  const attachTimer = setTimeout(() => {
    release();
    if (attached === 0) armDetach();
  }, spec.attachTimeoutMs);
  const heartbeat = setInterval(() => {
    bus.publish(ctl, encodeControl({ type: "heartbeat" }));
    // No recorder has said anything for too long: a shell must not run unrecorded.
    if (spec.orphanTimeoutMs > 0 && Date.now() - lastKeepalive > spec.orphanTimeoutMs) close("orphaned");
  }, spec.heartbeatMs);

  term.onExit(({ exitCode, signal }) => {
    ended = true;
    if (slave !== undefined) closeSync(slave);
    flush();
    for (const t of [flushTimer, detachTimer, attachTimer]) if (t) clearTimeout(t);
    clearInterval(heartbeat);
    unsubIn();
    unsubCtl();
    bus.publish(
      ctl,
      encodeControl({ type: "exit", code: exitCode, signal: signal ?? 0, reason: closeReason || "exit" }),
    );
    // Whatever the shell left behind (background jobs) ends with the session.
    signalSession(term.pid, "SIGHUP");
    const t = setTimeout(() => signalSession(term.pid, "SIGKILL"), tuning.killGraceMs);
    t.unref();
    if (killTimer) clearTimeout(killTimer);
    log.info(
      { session: spec.sessionId, exit_code: exitCode, signal, reason: closeReason || "exit" },
      "terminal session ended",
    );
    onEnd();
    resolveDone();
  });

  return { id: spec.sessionId, pid: term.pid, close, done };
}

import { closeSync, constants, openSync } from "node:fs";
import pty, { type IPty } from "node-pty";
import type { AgentLogger } from "../runtime.js";
import { encodeControl, parseControl, termSubject } from "./control.js";
import { initialSessionState, step, type SessionEffect, type SessionEvent, type SessionState } from "./lifecycle.js";
import { OutputBatcher } from "./output.js";
import { signalSession } from "./process-tree.js";
import { DEFAULT_TUNING, type SessionTuning } from "./tuning.js";

export { DEFAULT_TUNING, type SessionTuning } from "./tuning.js";

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
 * client still connecting); the recorder gets it then too. Attachment, timeouts and closing are
 * decided by the state machine in lifecycle.ts; the driver below performs its effects.
 */
export function startSession(
  spec: SessionSpec,
  bus: SessionBus,
  log: AgentLogger,
  onEnd: () => void,
  tuning: SessionTuning = DEFAULT_TUNING,
): PtySession {
  const s = new SessionDriver(spec, bus, log, onEnd, tuning);
  return {
    id: spec.sessionId,
    pid: s.term.pid,
    close: (reason) => s.dispatch({ type: "close", reason }),
    done: s.done,
  };
}

class SessionDriver {
  readonly term: IPty;
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private state: SessionState;
  private readonly out: string;
  private readonly ctl: string;
  private readonly slave: number | undefined;
  private readonly output: OutputBatcher;
  private readonly unsubIn: () => void;
  private readonly unsubCtl: () => void;
  private readonly attachTimer: NodeJS.Timeout;
  private readonly heartbeat: NodeJS.Timeout;
  private detachTimer: NodeJS.Timeout | undefined;
  private killTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly spec: SessionSpec,
    private readonly bus: SessionBus,
    private readonly log: AgentLogger,
    private readonly onEnd: () => void,
    private readonly tuning: SessionTuning,
  ) {
    this.out = termSubject(spec.sessionId, "out");
    this.ctl = termSubject(spec.sessionId, "ctl");
    this.done = new Promise<void>((r) => {
      this.resolveDone = r;
    });
    this.state = initialSessionState(spec, Date.now());
    const term = pty.spawn(spec.shell, spec.args, {
      name: "xterm-256color",
      cols: spec.cols,
      rows: spec.rows,
      cwd: spec.cwd,
      env: spec.env,
      encoding: null,
    });
    this.term = term;
    this.slave = holdSlave(term);
    this.output = new OutputBatcher(tuning, {
      publish: (data) => bus.publish(this.out, data),
      pause: () => term.pause(),
      resume: () => term.resume(),
    });
    term.onData((chunk) => {
      const b = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as unknown as Buffer);
      this.output.write(b, b.length);
    });
    this.unsubIn = bus.subscribe(termSubject(spec.sessionId, "in"), (data) => {
      if (this.state.phase !== "ended") term.write(Buffer.from(data));
    });
    this.unsubCtl = bus.subscribe(this.ctl, (data) => {
      const message = parseControl(data);
      if (message) this.dispatch({ type: "control", message });
    });
    this.attachTimer = setTimeout(() => this.dispatch({ type: "attach_timeout" }), spec.attachTimeoutMs);
    this.heartbeat = setInterval(() => this.dispatch({ type: "heartbeat" }), spec.heartbeatMs);
    term.onExit(({ exitCode, signal }) => this.dispatch({ type: "exit", code: exitCode, signal }));
  }

  dispatch(event: SessionEvent): void {
    const t = step(this.state, event, Date.now());
    this.state = t.state;
    for (const effect of t.effects) this.perform(effect);
  }

  private perform(e: SessionEffect): void {
    const pid = this.term.pid;
    switch (e.type) {
      case "resize":
        this.term.resize(e.cols, e.rows);
        return;
      case "release":
        this.output.release();
        return;
      case "arm_detach":
        this.detachTimer = setTimeout(() => this.dispatch({ type: "detach_timeout" }), e.ms);
        return;
      case "clear_detach":
        if (this.detachTimer) clearTimeout(this.detachTimer);
        this.detachTimer = undefined;
        return;
      case "publish_heartbeat":
        this.bus.publish(this.ctl, encodeControl({ type: "heartbeat" }));
        return;
      case "hang_up":
        signalSession(pid, "SIGHUP");
        if (!e.armKill) return;
        this.killTimer = setTimeout(() => signalSession(pid, "SIGKILL"), this.tuning.killGraceMs);
        this.killTimer.unref();
        return;
      case "finish":
        this.finish(e);
        return;
    }
  }

  private finish(e: Extract<SessionEffect, { type: "finish" }>): void {
    const pid = this.term.pid;
    if (this.slave !== undefined) closeSync(this.slave);
    this.output.flush();
    for (const t of [this.detachTimer, this.attachTimer]) if (t) clearTimeout(t);
    clearInterval(this.heartbeat);
    this.unsubIn();
    this.unsubCtl();
    this.bus.publish(this.ctl, encodeControl({ type: "exit", code: e.code, signal: e.signal ?? 0, reason: e.reason }));
    // Whatever the shell left behind (background jobs) ends with the session.
    signalSession(pid, "SIGHUP");
    setTimeout(() => signalSession(pid, "SIGKILL"), this.tuning.killGraceMs).unref();
    if (this.killTimer) clearTimeout(this.killTimer);
    this.log.info(
      { session: this.spec.sessionId, exit_code: e.code, signal: e.signal, reason: e.reason },
      "terminal session ended",
    );
    this.onEnd();
    this.resolveDone();
  }
}

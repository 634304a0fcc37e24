import type { ControlMessage } from "./control.js";

/**
 * The life of a PTY session as a pure transition function: `step(state, event, now)` returns the
 * next state and the effects the driver (session.ts) must perform, in order. It decides who is
 * attached, when output is released, when an unattended or unrecorded session is closed, and when
 * the session's processes are signalled. The output itself (batching) is output.ts's.
 *
 *   running → closing (hung up, SIGKILL armed) → ended (the shell exited)
 *
 * A session may also end straight from running (the shell exits by itself).
 */

export interface SessionState {
  /** 0 = no detach grace: a session nobody watches runs on. */
  detachGraceMs: number;
  /** 0 = no orphan check. */
  orphanTimeoutMs: number;
  phase: "running" | "closing" | "ended";
  attached: number;
  /** The first reason given for closing (reported in the exit message). */
  closeReason: string;
  lastKeepalive: number;
  /** The detach grace is running, or has already run out. */
  detachArmed: boolean;
}

export type SessionEvent =
  | { type: "control"; message: ControlMessage }
  /** Asked by the agent (closeTerminal). */
  | { type: "close"; reason: string }
  /** No client attached while the ticket was valid. */
  | { type: "attach_timeout" }
  | { type: "detach_timeout" }
  | { type: "heartbeat" }
  /** `signal` as node-pty reports it (undefined when none). */
  | { type: "exit"; code: number; signal: number | undefined };

export type SessionEffect =
  | { type: "resize"; cols: number; rows: number }
  /** End the hold on output (output.ts). */
  | { type: "release" }
  | { type: "arm_detach"; ms: number }
  | { type: "clear_detach" }
  | { type: "publish_heartbeat" }
  /** SIGHUP to the session's processes; with `armKill`, SIGKILL after the grace. */
  | { type: "hang_up"; armKill: boolean }
  /** The shell exited: flush, stop the timers, publish the exit, reap what is left, report the end. */
  | { type: "finish"; code: number; signal: number | undefined; reason: string };

export interface SessionTransition {
  state: SessionState;
  effects: SessionEffect[];
}

export function initialSessionState(
  spec: { detachGraceMs: number; orphanTimeoutMs: number },
  now: number,
): SessionState {
  return {
    detachGraceMs: spec.detachGraceMs,
    orphanTimeoutMs: spec.orphanTimeoutMs,
    phase: "running",
    attached: 0,
    closeReason: "",
    lastKeepalive: now,
    detachArmed: false,
  };
}

const go = (state: SessionState, ...effects: SessionEffect[]): SessionTransition => ({ state, effects });

/** Every close hangs up again; the SIGKILL is armed once and the first reason is kept. */
function close(s: SessionState, reason: string): SessionTransition {
  if (s.phase === "ended") return go(s);
  const next: SessionState = { ...s, phase: "closing", closeReason: s.closeReason || reason };
  return go(next, { type: "release" }, { type: "hang_up", armKill: s.phase === "running" });
}

/** Starts the detach grace, unless there is none, it already runs (or ran) or the session ended. */
function armDetach(s: SessionState, ...before: SessionEffect[]): SessionTransition {
  if (s.detachGraceMs <= 0 || s.detachArmed || s.phase === "ended") return go(s, ...before);
  return go({ ...s, detachArmed: true }, ...before, { type: "arm_detach", ms: s.detachGraceMs });
}

function onControl(s: SessionState, m: ControlMessage, now: number): SessionTransition {
  switch (m.type) {
    case "resize":
      return s.phase === "ended" ? go(s) : go(s, { type: "resize", cols: m.cols, rows: m.rows });
    case "attach":
      return go({ ...s, attached: s.attached + 1, detachArmed: false }, { type: "clear_detach" }, { type: "release" });
    case "detach": {
      const next = { ...s, attached: Math.max(0, s.attached - 1) };
      return next.attached === 0 ? armDetach(next) : go(next);
    }
    case "keepalive":
      return go({ ...s, lastKeepalive: now });
    case "close":
      return close(s, m.reason || "closed");
    case "ended":
      return close(s, m.reason || "ended");
    default:
      return go(s); // heartbeat and exit are ours; nothing to do
  }
}

export function step(s: SessionState, e: SessionEvent, now: number): SessionTransition {
  switch (e.type) {
    case "control":
      return onControl(s, e.message, now);
    case "close":
      return close(s, e.reason);
    case "attach_timeout":
      // Nobody attached while the ticket was valid: release the output (it is recorded) and let
      // the detach grace end a session no one will use.
      return s.attached === 0 ? armDetach(s, { type: "release" }) : go(s, { type: "release" });
    case "detach_timeout":
      return s.attached === 0 ? close(s, "detached") : go(s);
    case "heartbeat": {
      const beat: SessionEffect = { type: "publish_heartbeat" };
      // No recorder has said anything for too long: a shell must not run unrecorded.
      if (s.orphanTimeoutMs <= 0 || now - s.lastKeepalive <= s.orphanTimeoutMs) return go(s, beat);
      const t = close(s, "orphaned");
      return { state: t.state, effects: [beat, ...t.effects] };
    }
    case "exit":
      return go(
        { ...s, phase: "ended" },
        { type: "finish", code: e.code, signal: e.signal, reason: s.closeReason || "exit" },
      );
  }
}

/**
 * The life of one recorded session on its recording replica, as a pure transition function:
 * `step(state, event, limits)` returns the next state and the effects the driver (recordings.ts)
 * performs, in order. Nothing here does I/O; the recorder's clocks arrive with each tick.
 *
 *   recording → closing → ended
 *        └──────────────↗
 *
 * `closing`: a close was asked (operator, idle timeout, maximum duration); the shell has
 * CLOSE_GRACE_MS to send its last bytes and exit before the session is finalised anyway.
 * `ended`: finalising, handed over or dropped; every later event but `abort` is ignored, so a
 * session is finalised at most once by this replica.
 */

/** After a close is requested, how long the recorder waits for the shell's last bytes and exit. */
export const CLOSE_GRACE_MS = 3000;

export interface Outcome {
  status: "closed" | "failed";
  reason: string;
  exitCode: number | null;
}

export type RecordingState =
  | { phase: "recording"; openedAt: number; lastKeepalive: number }
  | { phase: "closing"; openedAt: number; lastKeepalive: number; reason: string; since: number }
  | { phase: "ended" };

/** The terminal config's limits, in ms. */
export interface Limits {
  agentSilenceMs: number;
  idleTimeoutMs: number;
  maxDurationMs: number;
  heartbeatMs: number;
}

export type RecordingEvent =
  /** The periodic check, with the recorder's last agent message and last activity. */
  | { type: "tick"; now: number; lastAgentAt: number; lastActivityAt: number }
  /** The agent reported the shell's end. */
  | { type: "exit"; code: number; signal: number; reason: string }
  /** Someone asked for the session to close (DELETE on any replica). */
  | { type: "close_requested"; now: number }
  /** Another replica holds the lease now. */
  | { type: "lease_lost" }
  /** The PTY never came up. */
  | { type: "abort" }
  /** This replica stops; another one resumes the recording. */
  | { type: "shutdown" };

export type RecordingEffect =
  /** Stop the recorder, write the final state and forget the session. */
  | { type: "finish"; outcome: Outcome }
  | { type: "send_close"; reason: string }
  | { type: "send_keepalive" }
  /** Forget the session and stop the recorder without finalising it (someone else will). */
  | { type: "release"; why: "lease_lost" | "shutdown" }
  /** Forget the session, stop the recorder and delete its file. */
  | { type: "discard" };

export interface Transition {
  state: RecordingState;
  effects: RecordingEffect[];
}

export function initialRecordingState(openedAt: number): RecordingState {
  return { phase: "recording", openedAt, lastKeepalive: 0 };
}

const go = (state: RecordingState, ...effects: RecordingEffect[]): Transition => ({ state, effects });
const ENDED: RecordingState = { phase: "ended" };

/** How a shell's end is recorded. */
export function exitOutcome(s: RecordingState, code: number, signal: number, reason: string): Outcome {
  const exitCode = signal ? 128 + signal : code;
  // An agent ends a PTY nobody records ("orphaned"); "agent_disconnected" is for a relay that
  // reports a dropped link on behalf of its agent.
  if (reason === "orphaned") return { status: "failed", reason: "recorder_lost", exitCode };
  if (reason === "agent_disconnected") return { status: "failed", reason: "agent_lost", exitCode: null };
  const closing = s.phase === "closing" ? s.reason : undefined;
  return { status: "closed", reason: closing ?? (reason === "detached" ? "detached" : "exit"), exitCode };
}

function onTick(
  s: Exclude<RecordingState, { phase: "ended" }>,
  e: Extract<RecordingEvent, { type: "tick" }>,
  limits: Limits,
): Transition {
  const { now } = e;
  let next: RecordingState = s;
  const effects: RecordingEffect[] = [];
  if (s.phase === "closing") {
    if (now - s.since > CLOSE_GRACE_MS) {
      next = ENDED;
      effects.push({ type: "finish", outcome: { status: "closed", reason: s.reason, exitCode: null } });
    }
  } else if (now - e.lastAgentAt > limits.agentSilenceMs) {
    // No keepalive for a session that failed.
    return go(ENDED, { type: "finish", outcome: { status: "failed", reason: "agent_lost", exitCode: null } });
  } else {
    const tooLong = now - s.openedAt > limits.maxDurationMs;
    if (tooLong || now - e.lastActivityAt > limits.idleTimeoutMs) {
      const reason = tooLong ? "max_duration" : "idle_timeout";
      next = { ...s, phase: "closing", reason, since: now };
      effects.push({ type: "send_close", reason });
    }
  }
  // Sent as long as the session was open at the start of the tick, even by the tick that ends it.
  if (now - s.lastKeepalive >= limits.heartbeatMs) {
    if (next.phase !== "ended") next = { ...next, lastKeepalive: now };
    effects.push({ type: "send_keepalive" });
  }
  return { state: next, effects };
}

export function step(s: RecordingState, e: RecordingEvent, limits: Limits): Transition {
  // The open failed and its row goes: the file goes too, even when a finalisation is under way.
  if (e.type === "abort") return go(ENDED, { type: "discard" });
  if (s.phase === "ended") return go(s);
  switch (e.type) {
    case "tick":
      return onTick(s, e, limits);
    case "exit":
      return go(ENDED, { type: "finish", outcome: exitOutcome(s, e.code, e.signal, e.reason) });
    case "close_requested":
      return s.phase === "closing" ? go(s) : go({ ...s, phase: "closing", reason: "closed_by_operator", since: e.now });
    case "lease_lost":
      return go(ENDED, { type: "release", why: "lease_lost" });
    case "shutdown":
      return go(ENDED, { type: "release", why: "shutdown" });
  }
}

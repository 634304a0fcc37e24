/**
 * The terminal attach WebSocket (docs/terminal.md#attach) as a small state machine: connecting →
 * open → closed (the session ended) or failed (this attach ended; the session may live on). Binary
 * frames carry bytes both ways; the only text frame we send is the resize. The states and the
 * reading of close codes/reasons are pure functions so they can be tested without a socket.
 */

import { TERMINAL_LIMIT_ENDS } from "@orch/contracts/rules/terminal";

export type TerminalState =
  | { kind: "connecting" }
  | { kind: "open" }
  /** The session is over: the shell exited (`exitCode`) or it was ended otherwise (`reason`). */
  | { kind: "closed"; exitCode: number | null; reason: string }
  /** The attach is over; `reattach` when the session may still run and a new ticket may get it back. */
  | { kind: "failed"; reason: string; reattach: boolean };

export type SocketEvent = { type: "open" } | { type: "close"; code: number; reason: string };

/** Close code the gateway uses when the credential behind the attach ended (logout, expiry, removal). */
export const REVOKED_CLOSE_CODE = 4401;
/** Close code the gateway uses when the operator may no longer reach the agent (docs/access.md). */
export const OUT_OF_SCOPE_CLOSE_CODE = 4403;

/** What the console says for each reason of OUT_OF_SCOPE_CLOSE_CODE. */
const OUT_OF_SCOPE_TEXT: Record<string, string> = {
  scope_changed: "your access scope changed: this agent is no longer in it",
  agent_out_of_scope: "this agent is no longer in your access scope",
};
/** The "shell exit" a relay publishes for an agent whose link dropped (services/agents bus-bridge). */
const AGENT_DISCONNECTED_EXIT = -1;

export const AGENT_DISCONNECTED = "agent disconnected";

/** What a close frame (code, reason) says about the session; `wasOpen` tells a refusal from a drop. */
export function stateOnClose(code: number, reason: string, wasOpen: boolean): TerminalState {
  const exit = /^exit:(-?\d+)$/.exec(reason);
  if (exit) {
    const n = Number(exit[1]);
    if (n === AGENT_DISCONNECTED_EXIT) return { kind: "failed", reason: AGENT_DISCONNECTED, reattach: false };
    return { kind: "closed", exitCode: n, reason: "exit" };
  }
  const ended = /^ended:([a-z_]+):(.*)$/.exec(reason);
  if (ended) {
    const [, status, why = ""] = ended;
    if (why === "agent_lost") return { kind: "failed", reason: AGENT_DISCONNECTED, reattach: false };
    if (status === "failed") return { kind: "failed", reason: `session failed (${why || "unknown"})`, reattach: false };
    return { kind: "closed", exitCode: null, reason: why || status || "ended" };
  }
  if (code === REVOKED_CLOSE_CODE)
    return { kind: "failed", reason: `signed out (${reason || "revoked"})`, reattach: false };
  if (code === OUT_OF_SCOPE_CLOSE_CODE) {
    const text = OUT_OF_SCOPE_TEXT[reason] ?? "this agent is no longer in your access scope";
    return { kind: "failed", reason: `${text} (${reason || "out_of_scope"})`, reattach: false };
  }
  if (code === 1001) return { kind: "failed", reason: "gateway went away", reattach: true };
  if (!wasOpen) return { kind: "failed", reason: "could not attach", reattach: true };
  if (code === 1006) return { kind: "failed", reason: "connection lost", reattach: true };
  return {
    kind: "failed",
    reason: reason ? `disconnected (${reason})` : `disconnected (code ${code})`,
    reattach: true,
  };
}

/** The next state; a finished state never changes again (a late event is ignored). */
export function transition(state: TerminalState, event: SocketEvent): TerminalState {
  if (state.kind === "closed" || state.kind === "failed") return state;
  if (event.type === "open") return state.kind === "connecting" ? { kind: "open" } : state;
  return stateOnClose(event.code, event.reason, state.kind === "open");
}

/** The status line's words (the UI contract: "connecting", "open", "closed (exit N)", "agent disconnected"). */
export function statusText(state: TerminalState): string {
  switch (state.kind) {
    case "connecting":
      return "connecting";
    case "open":
      return "open";
    case "closed":
      return state.exitCode !== null ? `closed (exit ${state.exitCode})` : `closed (${state.reason})`;
    case "failed":
      return state.reason;
  }
}

export const isFinished = (s: TerminalState) => s.kind === "closed" || s.kind === "failed";

/** The one control frame a client sends; the gateway accepts 1..1000 for both. */
export function resizeFrame(cols: number, rows: number): string {
  const clamp = (n: number) => Math.min(1000, Math.max(1, Math.floor(n)));
  return JSON.stringify({ type: "resize", cols: clamp(cols), rows: clamp(rows) });
}

/** The parts of a WebSocket this module uses (a fake in tests). */
export interface SocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: string | ArrayBufferLike | Uint8Array): void;
  close(code?: number, reason?: string): void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

const OPEN = 1;
const encoder = new TextEncoder();

/**
 * One attach. Input typed before the socket opens is queued (the first prompt arrives only after
 * the attach anyway); the latest size is sent as soon as it opens, so a re-attach from a window of
 * another size resizes the PTY.
 */
export class TerminalSocket {
  state: TerminalState = { kind: "connecting" };
  private readonly ws: SocketLike;
  private pending: Uint8Array[] = [];
  private size: { cols: number; rows: number } | undefined;
  private detached = false;

  constructor(
    url: string,
    private readonly handlers: { onData(bytes: Uint8Array): void; onState(state: TerminalState): void },
    make: (url: string) => SocketLike = (u) => new WebSocket(u) as unknown as SocketLike,
  ) {
    this.ws = make(url);
    this.ws.binaryType = "arraybuffer";
    this.ws.onopen = () => {
      this.move({ type: "open" });
      if (this.size) this.ws.send(resizeFrame(this.size.cols, this.size.rows));
      for (const chunk of this.pending) this.ws.send(chunk);
      this.pending = [];
    };
    this.ws.onmessage = (ev) => {
      // Text frames are the gateway's answers to a bad control frame: nothing to show the operator.
      if (ev.data instanceof ArrayBuffer) this.handlers.onData(new Uint8Array(ev.data));
    };
    this.ws.onclose = (ev) => this.move({ type: "close", code: ev.code, reason: ev.reason });
    // An error is always followed by a close, which carries what there is to know.
    this.ws.onerror = () => {};
  }

  write(data: string | Uint8Array): void {
    const bytes = typeof data === "string" ? encoder.encode(data) : data;
    if (this.state.kind === "open" && this.ws.readyState === OPEN) this.ws.send(bytes);
    else if (this.state.kind === "connecting") this.pending.push(bytes);
  }

  resize(cols: number, rows: number): void {
    this.size = { cols, rows };
    if (this.state.kind === "open" && this.ws.readyState === OPEN) this.ws.send(resizeFrame(cols, rows));
  }

  /** Leaves the session running (the page is going away); no state change is reported after this. */
  detach(): void {
    this.detached = true;
    this.ws.close(1000, "detach");
  }

  private move(event: SocketEvent): void {
    if (this.detached) return;
    const next = transition(this.state, event);
    if (next === this.state) return;
    this.state = next;
    this.handlers.onState(next);
  }
}

/**
 * The state of a session read from the API rather than from a socket (a reload of an ended session,
 * the sessions list): the same words as the live status line.
 */
export function stateOfSession(s: {
  status: string;
  exit_code: number | null;
  close_reason: string | null;
}): TerminalState {
  if (s.status === "opening") return { kind: "connecting" };
  if (s.status === "open") return { kind: "open" };
  if (s.close_reason === "agent_lost") return { kind: "failed", reason: AGENT_DISCONNECTED, reattach: false };
  if (s.status === "failed")
    return { kind: "failed", reason: `session failed (${s.close_reason ?? "unknown"})`, reattach: false };
  if (s.close_reason !== null && TERMINAL_LIMIT_ENDS.has(s.close_reason))
    return { kind: "closed", exitCode: null, reason: s.close_reason };
  if (s.exit_code !== null) return { kind: "closed", exitCode: s.exit_code, reason: s.close_reason ?? "exit" };
  return { kind: "closed", exitCode: null, reason: s.close_reason ?? "ended" };
}

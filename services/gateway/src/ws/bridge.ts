import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import WebSocket from "ws";
import { PTY_DIM_MAX, TERMINAL_LIMIT_ENDS } from "@orch/contracts";
import type { Logger } from "@orch/kit";
import { encodeControl, parseClientControl, parseEnd, termSubject } from "./control.js";

/** A client that lets this much output pile up is cut off rather than growing the gateway's memory. */
const MAX_BUFFERED = 16 * 1024 * 1024;
const PING_MS = 30_000;
/** How long a revoked client gets to answer the close frame before its socket is dropped. */
const REVOKE_GRACE_MS = 1_000;

export interface Bridge {
  close(code: number, reason: string): void;
  /**
   * Ends the attach because its credential ended: from now on no input reaches the shell and no
   * output the client, whatever the client does with the closing handshake.
   */
  revoke(code: number, reason: string): void;
  /** Drops the connection without a closing handshake. */
  terminate(): void;
  readonly closed: Promise<void>;
}

/** WebSocket close reason for the session's end: `exit:<code>` when the shell's status is known. */
export function endReason(end: NonNullable<ReturnType<typeof parseEnd>>): string {
  if (TERMINAL_LIMIT_ENDS.has(end.reason)) return `ended:closed:${end.reason}`;
  if (end.type === "exit") return `exit:${end.signal ? 128 + end.signal : end.code}`;
  if (end.exit_code !== null) return `exit:${end.exit_code}`;
  return `ended:${end.status}:${end.reason}`.slice(0, 120);
}

/**
 * One attached client: binary frames ↔ `orch.term.<id>.in` / `.out`, text frames (resize) → `.ctl`.
 * The socket closes when the session ends; closing the socket leaves the session running (the
 * agent ends it after its detach grace, the terminal service after the idle timeout).
 */
export async function bridgeSocket(opts: {
  ws: WebSocket;
  nc: NatsConnection;
  sessionId: string;
  log: Logger;
}): Promise<Bridge> {
  const { ws, nc, sessionId, log } = opts;
  const ctl = termSubject(sessionId, "ctl");
  const input = termSubject(sessionId, "in");
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  let alive = true;
  let revoked = false;

  const close = (code: number, reason: string) => {
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(code, reason);
  };
  const subs: Subscription[] = [
    nc.subscribe(termSubject(sessionId, "out"), {
      callback: (err, msg) => {
        if (err || revoked || ws.readyState !== WebSocket.OPEN) return;
        if (ws.bufferedAmount > MAX_BUFFERED) {
          log.warn({ session: sessionId }, "terminal client too slow; disconnecting it");
          ws.terminate();
          return;
        }
        ws.send(msg.data, { binary: true });
      },
    }),
    nc.subscribe(ctl, {
      callback: (err, msg) => {
        if (err) return;
        const end = parseEnd(msg.data);
        if (end) close(1000, endReason(end));
      },
    }),
  ];

  ws.on("message", (data: Buffer, isBinary: boolean) => {
    if (revoked) return;
    if (isBinary) {
      nc.publish(input, data);
      return;
    }
    const m = parseClientControl(data);
    if (m) nc.publish(ctl, encodeControl(m));
    else if (ws.readyState === WebSocket.OPEN)
      ws.send(
        JSON.stringify({
          type: "error",
          code: "invalid_control",
          detail: `text frames must be {"type":"resize","cols":1-${PTY_DIM_MAX},"rows":1-${PTY_DIM_MAX}}`,
        }),
      );
  });
  ws.on("pong", () => (alive = true));
  const ping = setInterval(() => {
    if (!alive) return ws.terminate();
    alive = false;
    ws.ping();
  }, PING_MS);
  ping.unref();
  ws.on("error", (err) => log.debug({ err: err.message, session: sessionId }, "terminal socket error"));
  ws.on("close", () => {
    clearInterval(ping);
    for (const s of subs) s.unsubscribe();
    if (!nc.isClosed()) nc.publish(ctl, encodeControl({ type: "detach" }));
    resolveClosed();
  });

  // Output flows once the agent hears of an attached client, and our subscriptions must be live first.
  await nc.flush();
  nc.publish(ctl, encodeControl({ type: "attach" }));
  const revoke = (code: number, reason: string) => {
    revoked = true;
    close(code, reason);
    // A client that never answers the close frame is cut off rather than held for ws's 30 s.
    setTimeout(() => ws.terminate(), REVOKE_GRACE_MS).unref();
  };
  return { close, revoke, terminate: () => ws.terminate(), closed };
}

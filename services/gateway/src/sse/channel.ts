import type { ServerResponse } from "node:http";
import { isScopeEnd, type Bound, type Credential, type EndReason, type LiveSessions } from "../live-sessions.js";

const HEARTBEAT_MS = 15_000;
/** A client this far behind is disconnected; it reconnects (and resumes or gets a new snapshot). */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

/**
 * What every server-sent-events stream of the gateway shares, whatever it streams: bounded writes,
 * a heartbeat, timers, ending with the credential that opened it, and one close that releases it
 * all. The streams (stream.ts and what extends it) keep only what they send and when.
 */
export class SseChannel {
  private timers: NodeJS.Timeout[] = [];
  private release: Bound | undefined;
  private closedFlag = false;
  /** Set when the stream's credential ended (logout, the operator's removal, expiry). */
  endedBy: EndReason | undefined;

  /** `onClose` runs once, when the stream closes for any reason (client gone, end, shutdown). */
  constructor(
    private readonly res: ServerResponse,
    private readonly kind: string,
    private readonly onClose: () => void,
  ) {
    res.on("close", () => this.close());
  }

  get closed() {
    return this.closedFlag;
  }

  /** True when the client is gone before the stream started. */
  get gone() {
    return this.res.destroyed || this.res.socket?.destroyed === true;
  }

  write(chunk: string) {
    const { res } = this;
    if (this.closedFlag || res.destroyed) return;
    res.write(chunk);
    if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
  }

  /** Sends the reconnect delay, then a comment every HEARTBEAT_MS so proxies keep the stream open. */
  start() {
    this.write("retry: 2000\n\n");
    this.every(HEARTBEAT_MS, () => this.write(": heartbeat\n\n"));
  }

  every(ms: number, fn: () => void) {
    if (!this.closedFlag) this.timers.push(setInterval(fn, ms));
  }

  /** Ends the stream with the credential that opened it; bound before anything is sent. */
  bindTo(live: LiveSessions, cred: Credential) {
    this.release = live.bind(cred, { kind: this.kind, end: (reason) => this.end(reason) });
  }

  /** The agents the stream shows: it ends when its operator may no longer reach one of them. */
  reaches(agents: readonly string[]) {
    this.release?.reaches(agents);
  }

  /**
   * An `error` event names why, then the stream ends: a reconnecting client gets 401 when the
   * credential ended, or a view without the agents out of its scope when the scope ended it.
   */
  end(reason: EndReason) {
    if (this.closedFlag) return;
    this.endedBy = reason;
    const detail = isScopeEnd(reason)
      ? "this stream shows an agent the operator may no longer reach; open it again for what is still in scope"
      : "the credential this stream was opened with has ended; sign in again";
    const data = { code: reason, detail };
    // Before the stream starts the response belongs to Fastify (the handler answers 401).
    if (this.res.headersSent) this.write(`event: error\ndata: ${JSON.stringify(data)}\n\n`);
    this.close();
  }

  close() {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.release?.();
    for (const t of this.timers) clearInterval(t);
    this.onClose();
    // Before the stream starts the response belongs to Fastify (it sends the problem).
    if (this.res.headersSent && !this.res.writableEnded) this.res.end();
  }
}

/**
 * Server-Sent Events with resumption. The browser's EventSource reconnects by itself after a dropped
 * connection (sending Last-Event-ID), but gives up for good on an HTTP error answer (a gateway
 * restarting answers 502/503); then we open a new one after a backoff, resuming after the last event
 * id we saw through the stream's `cursor` parameter, so nothing is missed or repeated. Pure (the
 * EventSource and the timer are injectable) so it is tested without a browser.
 */
import { backoff } from "@orch/kit/backoff";

export type LiveState = "connecting" | "live" | "retrying" | "stopped";

/** The subset of EventSource we use, so tests can pass a fake. */
export interface EventSourceLike {
  readonly readyState: number;
  addEventListener(type: string, listener: (e: Event) => void): void;
  close(): void;
}

export interface StreamOptions {
  /** The URL to open, resuming after `lastId` when given. */
  url: (lastId: string | undefined) => string;
  /** The SSE `event:` name carrying data. */
  event: string;
  onMessage: (data: string, id: string) => void;
  onState: (state: LiveState, detail?: string) => void;
  /** Where to start before any event arrived (e.g. the newest event already shown). */
  startAfter?: string | undefined;
  create?: (url: string) => EventSourceLike;
  /** Called after a refused connection; lets the shared client notice a 401 or an outage. */
  probe?: () => Promise<unknown>;
  schedule?: (fn: () => void, ms: number) => () => void;
  random?: () => number;
}

const CLOSED = 2;

/** What the console says when the gateway ended a stream for a reason of the operator's scope. */
const SCOPE_END_TEXT: Record<string, string> = {
  scope_changed: "your access scope changed",
  agent_out_of_scope: "an agent here left your access scope",
};

/**
 * Why the server ended the stream, from its `event: error` data ({code, detail}), for the status
 * line; "" when it names no reason worth showing (the credential ended: the probe sends to sign-in).
 */
export function serverEndText(data: string): string {
  let code = "";
  try {
    code = String((JSON.parse(data) as { code?: unknown }).code ?? "");
  } catch {
    return "";
  }
  const text = SCOPE_END_TEXT[code];
  return text ? `${text} (${code})` : "";
}

/** Opens the stream; the returned function stops it for good (no reconnect afterwards). */
export function openStream(opts: StreamOptions): () => void {
  const create = opts.create ?? ((url: string) => new EventSource(url));
  const schedule =
    opts.schedule ??
    ((fn, ms) => {
      const t = setTimeout(fn, ms);
      return () => clearTimeout(t);
    });
  let lastId = opts.startAfter;
  let attempt = 0;
  // Equal jitter: consoles reconnecting after a gateway restart spread out, yet none retries at once.
  const reconnectDelay = backoff({
    initialMs: 1000,
    maxMs: 30_000,
    jitter: "equal",
    random: opts.random ?? Math.random,
  });
  let stopped = false;
  let source: EventSourceLike | undefined;
  let cancelTimer: (() => void) | undefined;

  const connect = () => {
    if (stopped) return;
    opts.onState(attempt === 0 ? "connecting" : "retrying");
    const es = create(opts.url(lastId));
    source = es;
    es.addEventListener("open", () => {
      if (stopped || es !== source) return;
      attempt = 0;
      opts.onState("live");
    });
    es.addEventListener(opts.event, (e) => {
      if (stopped || es !== source) return;
      const m = e as MessageEvent<string>;
      if (m.lastEventId) lastId = m.lastEventId;
      opts.onMessage(m.data, m.lastEventId);
    });
    es.addEventListener("error", (e) => {
      if (stopped || es !== source) return;
      // The server's own `event: error` (the credential ended) carries data; a transport error does not.
      const data = (e as MessageEvent<unknown>).data;
      const endedByServer = typeof data === "string" && data !== "";
      if (!endedByServer && es.readyState !== CLOSED) {
        opts.onState("retrying");
        return;
      }
      es.close();
      void opts.probe?.().catch(() => undefined);
      const delay = reconnectDelay(attempt++);
      // A scope end: the reconnect shows what is still in scope; say why what was shown went away.
      const why = endedByServer ? serverEndText(data) : "";
      opts.onState("retrying", `${why ? `${why}; ` : ""}reconnecting in ${Math.round(delay / 1000)} s`);
      cancelTimer = schedule(connect, delay);
    });
  };

  connect();
  return () => {
    stopped = true;
    cancelTimer?.();
    source?.close();
    opts.onState("stopped");
  };
}

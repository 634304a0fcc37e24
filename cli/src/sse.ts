/**
 * Reading a gateway text/event-stream (the run stream, the audit tail). Node's http client rather
 * than fetch: the stream must be destroyable at once (Ctrl-C, idle timeout) and read as it arrives.
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { ProblemError } from "./errors.js";

export interface SseFrame {
  /** `message` when the frame names none. */
  event: string;
  /** "" when the frame carries none. */
  id: string;
  data: string;
}

/** Parses a text/event-stream body into frames; frames without data (comments, heartbeats) are skipped. */
export function sseFrames(onFrame: (frame: SseFrame) => void): (chunk: string) => void {
  let buf = "";
  return (chunk) => {
    buf += chunk.replace(/\r\n?/g, "\n");
    for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
      const frame = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let event = "message";
      let id = "";
      const data: string[] = [];
      for (const line of frame.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("id:")) id = line.slice(3).trimStart();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) onFrame({ event, id, data: data.join("\n") });
    }
  };
}

/** What the gateway's reasons for ending a stream or a terminal mean to the person at the CLI. */
const END_TEXT: Record<string, string> = {
  logged_out: "signed out",
  operator_revoked: "the operator was removed",
  token_expired: "the login expired",
  token_invalid: "the login is no longer valid",
  scope_changed: "your access scope changed: the agent is no longer in it",
  agent_out_of_scope: "the agent is no longer in your access scope",
};

/** A gateway end reason (SSE `event: error` code, terminal close reason) in words, with the code. */
export function endReasonText(code: string): string {
  const text = END_TEXT[code];
  return text ? `${text} (${code})` : code;
}

export interface SseOptions {
  url: URL;
  token: string;
  /** Resumes after this event (the Last-Event-ID header). */
  lastEventId?: string | undefined;
  /** How long the server may take to answer. */
  timeoutMs: number;
  /** The stream is dropped after this long without a byte (the server's heartbeats count). */
  idleMs?: number;
  /** The server accepted the stream (answered 200). */
  onOpen?: () => void;
  onFrame: (frame: SseFrame) => void;
}

export interface SseStream {
  /** Resolves when the stream closes; rejects with the connection's error or the refusal as a ProblemError. */
  done: Promise<void>;
  destroy(): void;
}

export function openSse(o: SseOptions): SseStream {
  const headers: Record<string, string> = {
    accept: "text/event-stream",
    authorization: `Bearer ${o.token}`,
    "user-agent": "orchctl",
  };
  if (o.lastEventId) headers["last-event-id"] = o.lastEventId;
  let req: ReturnType<typeof httpRequest> | undefined;
  const done = new Promise<void>((resolve, reject) => {
    req = (o.url.protocol === "https:" ? httpsRequest : httpRequest)(o.url, { headers }, (res: IncomingMessage) => {
      clearTimeout(connectTimer);
      res.setEncoding("utf8");
      if (res.statusCode !== 200) {
        let text = "";
        res.on("data", (c: string) => (text += c));
        res.on("end", () => reject(refusal(res.statusCode ?? 0, text)));
        return;
      }
      o.onOpen?.();
      let idle: NodeJS.Timeout | undefined;
      const arm = () => {
        if (o.idleMs === undefined) return;
        clearTimeout(idle);
        idle = setTimeout(() => req?.destroy(new Error(`no data for ${o.idleMs! / 1000} s`)), o.idleMs);
      };
      arm();
      const parse = sseFrames(o.onFrame);
      res.on("data", (c: string) => {
        arm();
        parse(c);
      });
      res.on("close", () => {
        clearTimeout(idle);
        resolve();
      });
    });
    const connectTimer = setTimeout(
      () => req?.destroy(new Error(`no answer within ${o.timeoutMs / 1000}s`)),
      o.timeoutMs,
    );
    req.on("error", (err) => {
      clearTimeout(connectTimer);
      reject(err);
    });
    req.end();
  });
  return { done, destroy: () => req?.destroy() };
}

/** A non-200 answer as the problem it carries (or one made from the status when the body is not JSON). */
function refusal(status: number, text: string): ProblemError {
  let problem: Record<string, unknown> = {};
  try {
    problem = JSON.parse(text) as Record<string, unknown>;
  } catch {
    /* not JSON */
  }
  return new ProblemError({
    type: "about:blank",
    title: "error",
    status,
    detail: typeof problem.detail === "string" ? problem.detail : `HTTP ${status}`,
    code: typeof problem.code === "string" ? problem.code : `http_${status}`,
    ...problem,
  });
}

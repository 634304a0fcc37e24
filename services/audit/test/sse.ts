import { request, type ClientRequest, type IncomingMessage } from "node:http";

export interface SseEvent {
  id: string;
  event: string;
  data: any;
}

export interface SseStream {
  status: number;
  headers: IncomingMessage["headers"];
  /** Body of a non-200 answer. */
  body: any;
  events: SseEvent[];
  comments: string[];
  ended: Promise<void>;
  /** Resolves once at least `n` events arrived (rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<SseEvent[]>;
  close(): void;
}

/** A minimal EventSource over node:http that can send a bearer token and Last-Event-ID. */
export function openSse(url: string, o: { token?: string; lastEventId?: string } = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: "text/event-stream" };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    if (o.lastEventId) headers["last-event-id"] = o.lastEventId;
    let req: ClientRequest | undefined;
    req = request(url, { headers }, (res) => {
      const events: SseEvent[] = [];
      const comments: string[] = [];
      const waiters = new Set<() => boolean>();
      let buf = "";
      let text = "";
      const ended = new Promise<void>((r) => res.on("close", () => r()));
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: undefined,
        events,
        comments,
        ended,
        waitFor(n, timeoutMs = 15_000) {
          return new Promise((ok, fail) => {
            const check = () => {
              if (events.length < n) return false;
              clearTimeout(timer);
              ok(events);
              return true;
            };
            const timer = setTimeout(() => {
              waiters.delete(check);
              fail(new Error(`only ${events.length} of ${n} events within ${timeoutMs} ms`));
            }, timeoutMs);
            if (!check()) waiters.add(check);
          });
        },
        close() {
          req?.destroy();
        },
      };
      res.setEncoding("utf8");
      if (res.statusCode !== 200) {
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          try {
            stream.body = JSON.parse(text);
          } catch {
            stream.body = text;
          }
          resolve(stream);
        });
        return;
      }
      res.on("data", (chunk: string) => {
        buf += chunk;
        for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev: Partial<SseEvent> & { data?: string } = {};
          for (const line of frame.split("\n")) {
            if (line.startsWith(":")) comments.push(line.slice(1).trim());
            else if (line.startsWith("id: ")) ev.id = line.slice(4);
            else if (line.startsWith("event: ")) ev.event = line.slice(7);
            else if (line.startsWith("data: ")) ev.data = line.slice(6);
          }
          if (ev.data !== undefined)
            events.push({ id: ev.id ?? "", event: ev.event ?? "message", data: JSON.parse(ev.data) });
        }
        for (const w of waiters) if (w()) waiters.delete(w);
      });
      res.on("error", () => {});
      resolve(stream);
    });
    req.on("error", (err) => {
      if ((err as NodeJS.ErrnoException).code !== "ECONNRESET") reject(err);
    });
    req.end();
  });
}

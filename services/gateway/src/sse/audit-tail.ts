import type { ServerResponse } from "node:http";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditFeedSchema, type AuditService, type StoredEvent } from "@orch/contracts";
import type { CallOptions, Client, Logger, NatsConnection } from "@orch/kit";
import type { Credential, EndReason, LiveSessions } from "../live-sessions.js";
import { auditEventJson } from "../routes/audit-json.js";
import { matchesFilter, type FilterValues } from "../routes/audit-query.js";

/** Published by the audit service after each commit (AuditFeed in proto/orch/v1/audit.proto). */
export const AUDIT_FEED_SUBJECT = "orch.audit.feed.events";
/** How often a live tail re-reads the store, covering feed messages lost in transit. */
const POLL_MS = 5_000;
const HEARTBEAT_MS = 15_000;
/** A client this far behind is disconnected; it resumes with Last-Event-ID and loses nothing. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** Live events held while the backlog is sent; beyond this they are left to the next poll. */
const MAX_HELD = 10_000;
const PAGE = 500;

export interface AuditTailDeps {
  nc: NatsConnection;
  log: Logger;
  /** Open tails, so a gateway shutdown can end them. */
  registry: Set<AuditTail>;
  audit: Client<typeof AuditService>;
  call: CallOptions;
  filter: FilterValues;
  res: ServerResponse;
}

/**
 * `catching_up`: the backlog is being read (or the first page requested); feed events are held.
 * `live`: feed events are sent as they come, and the store is polled.
 * `closed`: nothing more is written; the feed subscription and the timers are gone.
 */
type TailState = { phase: "catching_up"; held: StoredEvent[] } | { phase: "live" } | { phase: "closed" };

/**
 * Streams stored events after a starting point, then live ones, with no gap and no repeat:
 * subscribe to the feed first (holding what arrives), send the backlog page by page in storage
 * order, then send held and live events not yet covered. Every POLL_MS the store is read again
 * from the last position, so a feed message lost in transit (or never sent because the audit
 * service crashed between commit and publish) still reaches the client. Storage positions follow
 * commit order, so "seq <= position" means "already examined".
 */
export class AuditTail {
  private state: TailState = { phase: "catching_up", held: [] };
  private position = 0;
  /** Sent from the feed, ahead of `position`: id → seq. */
  private readonly liveSent = new Map<string, number>();
  private polling = false;
  private timers: NodeJS.Timeout[] = [];
  private readonly sub;
  private release: (() => void) | undefined;
  /** Set when the stream's credential ended (logout, the operator's removal, expiry). */
  endedBy: EndReason | undefined;

  constructor(private readonly d: AuditTailDeps) {
    d.registry.add(this);
    d.res.on("close", () => this.close());
    this.sub = d.nc.subscribe(AUDIT_FEED_SUBJECT, {
      callback: (err, msg) => {
        if (err || this.closed) return;
        try {
          for (const e of fromBinary(AuditFeedSchema, msg.data).events) this.onLive(e);
        } catch (e) {
          d.log.debug({ err: (e as Error).message }, "undecodable audit feed message");
        }
      },
    });
  }

  get phase(): TailState["phase"] {
    return this.state.phase;
  }

  private get closed() {
    return this.state.phase === "closed";
  }

  /** First page: validates the request (errors become problem+json before anything is sent). */
  async open(afterId: string | undefined) {
    try {
      return await this.d.audit.tail({ filter: this.d.filter, limit: PAGE, afterId: afterId ?? "" }, this.d.call);
    } catch (err) {
      this.close();
      throw err;
    }
  }

  async run(first: { events: StoredEvent[]; position: number; hasMore: boolean }) {
    const { res } = this.d;
    if (res.socket?.destroyed) return this.close();
    res.write("retry: 2000\n\n");
    let page = first;
    for (;;) {
      for (const e of page.events) this.send(e);
      this.position = page.position;
      if (!page.hasMore || this.closed) break;
      page = await this.d.audit.tail({ filter: this.d.filter, limit: PAGE, afterSeq: this.position }, this.d.call);
    }
    if (this.state.phase !== "catching_up") return;
    const { held } = this.state;
    this.state = { phase: "live" };
    for (const e of held) this.onLive(e);
    if (this.closed) return;
    this.timers.push(
      setInterval(() => void this.poll(), POLL_MS),
      setInterval(() => this.write(": heartbeat\n\n"), HEARTBEAT_MS),
    );
  }

  private onLive(e: StoredEvent) {
    switch (this.state.phase) {
      case "catching_up":
        if (this.state.held.length < MAX_HELD) this.state.held.push(e);
        return;
      case "live": {
        const id = e.event?.id;
        if (!id || e.seq <= this.position || this.liveSent.has(id) || !matchesFilter(this.d.filter, e.event!)) return;
        this.liveSent.set(id, e.seq);
        this.send(e);
        return;
      }
      case "closed":
        return;
    }
  }

  private async poll() {
    if (this.polling || this.closed) return;
    this.polling = true;
    try {
      for (;;) {
        const page = await this.d.audit.tail(
          { filter: this.d.filter, limit: PAGE, afterSeq: this.position },
          this.d.call,
        );
        for (const e of page.events) if (!this.liveSent.has(e.event?.id ?? "")) this.send(e);
        this.position = page.position;
        if (!page.hasMore || this.closed) break;
      }
      for (const [id, seq] of this.liveSent) if (seq <= this.position) this.liveSent.delete(id);
    } catch (err) {
      this.d.log.debug({ err: (err as Error).message }, "audit tail poll failed; retrying at the next interval");
    } finally {
      this.polling = false;
    }
  }

  private send(e: StoredEvent) {
    if (!e.event) return;
    this.write(`id: ${e.event.id}\nevent: audit\ndata: ${JSON.stringify(auditEventJson(e.event))}\n\n`);
  }

  private write(chunk: string) {
    const { res } = this.d;
    if (this.closed || res.destroyed) return;
    res.write(chunk);
    if (res.writableLength > MAX_BUFFERED_BYTES) res.destroy();
  }

  /** Ends the stream with the credential that opened it; bound before anything is sent. */
  bindTo(live: LiveSessions, cred: Credential) {
    this.release = live.bind(cred, { kind: "audit_stream", end: (reason) => this.end(reason) });
  }

  /** An `error` event names why, then the stream ends; a reconnecting client gets 401. */
  end(reason: EndReason) {
    if (this.closed) return;
    this.endedBy = reason;
    const data = { code: reason, detail: "the credential this stream was opened with has ended; sign in again" };
    // Before the stream starts the response belongs to Fastify (the handler answers 401).
    if (this.d.res.headersSent) this.write(`event: error\ndata: ${JSON.stringify(data)}\n\n`);
    this.close();
  }

  close() {
    if (this.closed) return;
    this.state = { phase: "closed" };
    this.release?.();
    this.d.registry.delete(this);
    for (const t of this.timers) clearInterval(t);
    this.sub.unsubscribe();
    // Before the stream starts the response belongs to Fastify (it sends the problem).
    if (this.d.res.headersSent && !this.d.res.writableEnded) this.d.res.end();
  }
}

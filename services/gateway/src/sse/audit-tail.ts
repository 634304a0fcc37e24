import type { ServerResponse } from "node:http";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditFeedSchema, type AuditService, type StoredEvent } from "@orch/contracts";
import type { CallOptions, Client, Logger, NatsConnection } from "@orch/kit";
import type { Credential, EndReason, LiveSessions } from "../live-sessions.js";
import { auditEventJson } from "../routes/audit-json.js";
import { matchesFilter, type FilterValues } from "../routes/audit-query.js";
import { SseChannel } from "./channel.js";

/** Published by the audit service after each commit (AuditFeed in proto/orch/v1/audit.proto). */
export const AUDIT_FEED_SUBJECT = "orch.audit.feed.events";
/** How often a live tail re-reads the store, covering feed messages lost in transit. */
const POLL_MS = 5_000;
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
  /** A client too far behind is disconnected by the channel; it resumes with Last-Event-ID. */
  private readonly channel: SseChannel;
  private readonly sub;

  constructor(private readonly d: AuditTailDeps) {
    d.registry.add(this);
    this.channel = new SseChannel(d.res, "audit_stream", () => {
      this.state = { phase: "closed" };
      d.registry.delete(this);
      this.sub.unsubscribe();
    });
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
    this.channel.start();
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
    this.channel.every(POLL_MS, () => void this.poll());
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
    this.channel.write(chunk);
  }

  /** Set when the stream's credential ended (logout, the operator's removal, expiry). */
  get endedBy(): EndReason | undefined {
    return this.channel.endedBy;
  }

  /** Ends the stream with the credential that opened it; bound before anything is sent. */
  bindTo(live: LiveSessions, cred: Credential) {
    this.channel.bindTo(live, cred);
  }

  end(reason: EndReason) {
    this.channel.end(reason);
  }

  close() {
    this.channel.close();
  }
}

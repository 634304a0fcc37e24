import { fromBinary } from "@bufbuild/protobuf";
import { AUDIT_FEED_SUBJECT, AuditFeedSchema, type AuditService, type StoredEvent } from "@orch/contracts";
import type { Client } from "@orch/kit";
import { auditEventJson } from "../routes/audit-json.js";
import { matchesFilter, type FilterValues } from "../routes/audit-query.js";
import { SseStream, type SseStreamDeps } from "./stream.js";

/** How often a live tail re-reads the store, covering feed messages lost in transit. */
const POLL_MS = 5_000;
/** Live events held while the backlog is sent; beyond this they are left to the next poll. */
const MAX_HELD = 10_000;
const PAGE = 500;

export interface AuditTailDeps extends SseStreamDeps<AuditTail> {
  audit: Client<typeof AuditService>;
  filter: FilterValues;
  /** Where to start: the cursor or Last-Event-ID; none = now. */
  afterId: string | undefined;
}

/** One page of the store, as AuditService.Tail answers. */
type TailPage = { events: StoredEvent[]; position: number; hasMore: boolean };

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
export class AuditTail extends SseStream<TailPage> {
  private state: TailState = { phase: "catching_up", held: [] };
  private position = 0;
  /** Sent from the feed, ahead of `position`: id → seq. */
  private readonly liveSent = new Map<string, number>();
  private polling = false;
  private readonly sub;

  constructor(private readonly d: AuditTailDeps) {
    // A client too far behind is disconnected by the channel; it resumes with Last-Event-ID.
    super(d, "audit_stream");
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

  /** First page: validates the request. */
  protected snapshot(): Promise<TailPage> {
    return this.d.audit.tail({ filter: this.d.filter, limit: PAGE, afterId: this.d.afterId ?? "" }, this.d.call);
  }

  async run(first: TailPage) {
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

  protected released() {
    this.state = { phase: "closed" };
    this.sub.unsubscribe();
  }
}

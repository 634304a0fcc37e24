import { DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import {
  activeLink,
  AUDIT_STREAM,
  backoff,
  createDurableConsumer,
  ensureAuditStream,
  registerConsumerMetrics,
  retry,
  type Logger,
  type NatsConnection,
  type Pool,
  type TraceLink,
  withSpan,
} from "@orch/kit";
import { Counter, type Registry } from "prom-client";
import { toRow } from "./convert.js";
import { type DecodedEvent, decodeAuditEvent } from "./decode.js";
import { eventsDb, type EventRow, isKnownId } from "./db/events.js";
import type { Stored } from "./feed.js";
import { parseUlid } from "./ulid-time.js";

export interface IngestOptions {
  consumer: string;
  batchSize: number;
  maxAckPending: number;
  ackWaitMs: number;
  stream: { replicas: number; maxAgeDays: number };
}

export interface IngestDeps {
  nc: NatsConnection;
  pool: Pool;
  log: Logger;
  metrics: Registry;
  options: IngestOptions;
  /** Called after each commit with the events that batch newly stored. */
  onStored(events: Stored[]): void;
}

export interface Ingest {
  start(): Promise<void>;
  /** Stops pulling, stores and acknowledges what was already received, then returns. */
  stop(): Promise<void>;
}

/** Retrying a batch Postgres could not take: 100 ms doubling to 5 s, until stopped. */
const STORE_RETRY = backoff({ initialMs: 100, maxMs: 5000 });

/**
 * Only data exceptions, constraint violations and size limits (SQLSTATE classes 22, 23, 54) are
 * blamed on an event; anything else (connection loss, shutdown, timeouts, even our own bugs) is
 * retried, because terminating events on it would lose them.
 */
function transient(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== "string" || !/^[0-9A-Z]{5}$/.test(code)) return true;
  return !["22", "23", "54"].includes(code.slice(0, 2));
}

/**
 * Stores the AUDIT stream in Postgres through a durable pull consumer with explicit acks. Events
 * are inserted in batches (ON CONFLICT (id) DO NOTHING) and acknowledged only after the commit, so
 * a crash anywhere leads to redelivery and never to a loss; the id makes redelivery harmless.
 */
export function createIngest(deps: IngestDeps): Ingest {
  const { nc, pool, log, options } = deps;
  const counter = (name: string, help: string) =>
    (deps.metrics.getSingleMetric(name) as Counter | undefined) ??
    new Counter({ name, help, registers: [deps.metrics] });
  const stored = counter("audit_events_stored_total", "Events newly stored");
  const duplicates = counter("audit_events_duplicate_total", "Deliveries of events already stored");
  const rejected = counter(
    "audit_events_rejected_total",
    "Messages that could not be stored (undecodable or refused by Postgres)",
  );

  // Keyed by stream sequence: a redelivery of a message still waiting here replaces it.
  const buffer = new Map<number, Received>();
  let running = false;
  let wake: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  const stopping = new AbortController();

  // Pulls ahead of the insert so the next batch is decoded while the previous one commits.
  const consumer = createDurableConsumer({
    nc,
    log,
    consumer: {
      stream: AUDIT_STREAM,
      durable: options.consumer,
      deliverPolicy: DeliverPolicy.All,
      ackWaitMs: options.ackWaitMs,
      maxAckPending: options.maxAckPending,
      maxDeliver: -1,
      retune: true,
    },
    ensureStream: () => ensureAuditStream(nc, options.stream),
    maxMessages: Math.min(options.maxAckPending, options.batchSize * 4),
    receive,
  });
  registerConsumerMetrics(deps.metrics, nc, { stream: AUDIT_STREAM, durable: options.consumer });

  /** A delivered message, decoded on arrival so decoding overlaps with the previous insert. */
  interface Received {
    m: JsMsg;
    id: string;
    row: EventRow;
    /** The message's consumer span, linked from the batch that stores it (tracing on only). */
    link: TraceLink | undefined;
  }

  function receive(m: JsMsg): void {
    let ev: DecodedEvent | undefined;
    try {
      ev = decodeAuditEvent(m.data);
    } catch {
      ev = undefined;
    }
    const id = ev ? parseUlid(ev.id) : undefined;
    if (!ev || !id || id !== ev.id || !ev.eventType) {
      // Redelivering it would never help: drop it from the stream's pending set, loudly.
      log.error({ subject: m.subject, stream_seq: m.seq }, "audit message is not a valid AuditEvent; terminated");
      rejected.inc();
      m.term("invalid AuditEvent");
      return;
    }
    const { row, skewed } = toRow(ev);
    if (skewed)
      log.warn({ id, event_type: ev.eventType }, "event timestamp lies far from its id time; time filters may miss it");
    buffer.set(m.seq, { m, id, row, link: activeLink() });
    wake?.();
  }

  // One statement, its own transaction: committed (and the ingest lock released) when it returns.
  async function insert(rows: EventRow[]): Promise<Array<{ id: string; seq: number }>> {
    return eventsDb.insert(pool, rows);
  }

  /** The plain insert first; a batch holding a stored id (a redelivery) again with ON CONFLICT. */
  async function insertBatch(rows: EventRow[]): Promise<Array<{ id: string; seq: number }>> {
    try {
      return await eventsDb.insertNew(pool, rows);
    } catch (err) {
      if (!isKnownId(err)) throw err;
      return insert(rows);
    }
  }

  /** Inserts rows one by one after a batch was refused, so one bad event cannot block the rest. */
  async function insertEach(
    rows: EventRow[],
  ): Promise<{ inserted: Array<{ id: string; seq: number }>; refused: Set<string> }> {
    const inserted: Array<{ id: string; seq: number }> = [];
    const refused = new Set<string>();
    for (const row of rows) {
      try {
        inserted.push(...(await insert([row])));
      } catch (err) {
        if (transient(err)) throw err;
        log.error(
          { id: row.id, event_type: row.event_type, pg_code: (err as { code?: string }).code },
          "Postgres refused an audit event; terminated",
        );
        refused.add(row.id);
      }
    }
    return { inserted, refused };
  }

  /** Settlements of committed batches not yet run; run() waits for them before it returns. */
  let settling: Promise<void> = Promise.resolve();

  function afterCommit(settle: () => void): void {
    const previous = settling;
    settling = new Promise<void>((resolve) =>
      setImmediate(() => {
        try {
          settle();
        } catch (err) {
          // An ack that cannot be sent (connection closing) only means a harmless redelivery.
          log.warn({ err: (err as Error).message }, "cannot acknowledge stored audit events; they will be redelivered");
        }
        resolve();
      }),
    ).then(() => previous);
  }

  async function storeBatch(held: Received[]): Promise<void> {
    const byId = new Map(held.map((r) => [r.id, r]));
    const rows = [...byId.values()].map((r) => r.row);
    let lastExtend = Date.now();
    await retry(
      async () => {
        let inserted: Array<{ id: string; seq: number }>;
        let refused = new Set<string>();
        try {
          inserted = await insertBatch(rows);
        } catch (err) {
          if (transient(err)) throw err;
          ({ inserted, refused } = await insertEach(rows));
        }
        // Committed: acknowledge, count and announce the batch, after the next batch has been sent
        // to Postgres (run() takes it within this turn of the event loop), so this work overlaps
        // the next insert instead of leaving Postgres idle while it runs.
        afterCommit(() => {
          for (const { m, id } of held) {
            if (refused.has(id)) m.term("refused by Postgres");
            else m.ack();
          }
          rejected.inc(refused.size);
          stored.inc(inserted.length);
          duplicates.inc(held.length - inserted.length - refused.size);
          if (inserted.length) deps.onStored(inserted.map((r) => ({ bytes: byId.get(r.id)!.m.data, seq: r.seq })));
        });
      },
      {
        policy: STORE_RETRY,
        signal: stopping.signal,
        onError: (err) => {
          log.warn({ err: (err as Error).message, events: rows.length }, "cannot store audit events yet; retrying");
          // Keep the stream from redelivering what we still hold while Postgres is away.
          if (Date.now() - lastExtend > options.ackWaitMs / 3) {
            for (const { m } of held) m.working();
            for (const { m } of buffer.values()) m.working();
            lastExtend = Date.now();
          }
        },
      },
    ).catch((err) => {
      // Stopping: leave the batch unacknowledged; the stream redelivers it to the next process.
      if (!stopping.signal.aborted) throw err;
    });
  }

  async function run(): Promise<void> {
    while (running || buffer.size > 0) {
      if (buffer.size === 0) {
        if (!running) break;
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 1000).unref();
        });
        wake = undefined;
        continue;
      }
      const batch: Received[] = [];
      for (const [seq, r] of buffer) {
        batch.push(r);
        buffer.delete(seq);
        if (batch.length >= options.batchSize) break;
      }
      // One span per batch, linked to each event's trace (a batch has no single parent).
      const links = batch.flatMap((r) => (r.link ? [r.link] : []));
      await withSpan(
        "audit.ingest.store",
        { links, attributes: { "messaging.batch.message_count": batch.length } },
        () => storeBatch(batch),
      );
    }
    await settling;
  }

  return {
    async start() {
      if (running) return;
      running = true;
      consumer.start();
      loop = run();
    },
    async stop() {
      running = false;
      stopping.abort(new Error("ingest stopped"));
      await consumer.stop();
      wake?.();
      await loop;
    },
  };
}

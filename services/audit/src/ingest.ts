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
import type { EventRow } from "./db/events.js";
import type { Stored } from "./feed.js";
import { type IngestEffect, type IngestEvent, initialIngest, step } from "./ingest-step.js";
import { insertRows } from "./ingest-store.js";

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

/** A delivered message, decoded on arrival so decoding overlaps with the previous insert. */
interface Received {
  m: JsMsg;
  id: string;
  row: EventRow;
  /** The message's consumer span, linked from the batch that stores it (tracing on only). */
  link: TraceLink | undefined;
}

function ingestCounters(metrics: Registry) {
  const counter = (name: string, help: string) =>
    (metrics.getSingleMetric(name) as Counter | undefined) ?? new Counter({ name, help, registers: [metrics] });
  return {
    stored: counter("audit_events_stored_total", "Events newly stored"),
    duplicates: counter("audit_events_duplicate_total", "Deliveries of events already stored"),
    rejected: counter(
      "audit_events_rejected_total",
      "Messages that could not be stored (undecodable or refused by Postgres)",
    ),
  };
}

/**
 * Settlements of committed batches, each run after the next batch has been sent to Postgres (the
 * store loop takes it within this turn of the event loop), so that work overlaps the next insert
 * instead of leaving Postgres idle while it runs. `settled()` waits for those queued so far.
 */
function settlementQueue(log: Logger) {
  let settling: Promise<void> = Promise.resolve();
  return {
    after(settle: () => void): void {
      const previous = settling;
      settling = new Promise<void>((resolve) =>
        setImmediate(() => {
          try {
            settle();
          } catch (err) {
            // An ack that cannot be sent (connection closing) only means a harmless redelivery.
            log.warn(
              { err: (err as Error).message },
              "cannot acknowledge stored audit events; they will be redelivered",
            );
          }
          resolve();
        }),
      ).then(() => previous);
    },
    settled: () => settling,
  };
}

/** Up to `size` held deliveries, oldest first, taken out of the buffer. */
function takeBatch(buffer: Map<number, Received>, size: number): Received[] {
  const batch: Received[] = [];
  for (const [seq, r] of buffer) {
    batch.push(r);
    buffer.delete(seq);
    if (batch.length >= size) break;
  }
  return batch;
}

/** The durable consumer of the AUDIT stream, each delivery handed to `receive` as it arrives. */
function ingestConsumer(deps: IngestDeps, receive: (m: JsMsg) => void) {
  const { nc, options } = deps;
  // Pulls ahead of the insert so the next batch is decoded while the previous one commits.
  const consumer = createDurableConsumer({
    nc,
    log: deps.log,
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
  return consumer;
}

interface StoreContext {
  pool: Pool;
  log: Logger;
  ackWaitMs: number;
  /** Aborted on stop: a batch still failing then stays unacknowledged, for the stream to redeliver. */
  signal: AbortSignal;
  /** What is held besides the batch (kept from redelivery too while Postgres is away). */
  buffer: ReadonlyMap<number, Received>;
  /** The commit of the batch, with its messages by stream sequence. */
  committed(event: Extract<IngestEvent, { type: "committed" }>, msgs: ReadonlyMap<number, JsMsg>): void;
}

/** Stores a batch, retrying what Postgres could not take until it does or ingest stops. */
async function storeBatch(held: Received[], c: StoreContext): Promise<void> {
  const rows = [...new Map(held.map((r) => [r.id, r.row])).values()];
  const msgs = new Map(held.map((r) => [r.m.seq, r.m]));
  const batch = held.map((r) => ({ seq: r.m.seq, id: r.id }));
  let lastExtend = Date.now();
  await retry(
    async () => {
      const { inserted, refused } = await insertRows(c.pool, c.log, rows);
      c.committed({ type: "committed", batch, inserted, refused }, msgs);
    },
    {
      policy: STORE_RETRY,
      signal: c.signal,
      onError: (err) => {
        c.log.warn({ err: (err as Error).message, events: rows.length }, "cannot store audit events yet; retrying");
        // Keep the stream from redelivering what we still hold while Postgres is away.
        if (Date.now() - lastExtend > c.ackWaitMs / 3) {
          for (const { m } of held) m.working();
          for (const { m } of c.buffer.values()) m.working();
          lastExtend = Date.now();
        }
      },
    },
  ).catch((err) => {
    // Stopping: leave the batch unacknowledged; the stream redelivers it to the next process.
    if (!c.signal.aborted) throw err;
  });
}

/**
 * Stores the AUDIT stream in Postgres through a durable pull consumer with explicit acks. Events
 * are inserted in batches (ON CONFLICT (id) DO NOTHING) and acknowledged only after the commit, so
 * a crash anywhere leads to redelivery and never to a loss; the id makes redelivery harmless.
 * What to do with each delivery and commit is decided by ingest-step.ts; this drives the I/O.
 */
export function createIngest(deps: IngestDeps): Ingest {
  const { pool, log, options } = deps;
  const counters = ingestCounters(deps.metrics);
  // Keyed by stream sequence: a redelivery of a message still waiting here replaces it.
  const buffer = new Map<number, Received>();
  const queue = settlementQueue(log);
  const stopping = new AbortController();
  let state = initialIngest;
  let wake: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let consumerStopped: Promise<void> | undefined;

  /** Performs a step's effects; `msgs` are the messages they may settle, by stream sequence. */
  function dispatch(event: IngestEvent, msgs: ReadonlyMap<number, JsMsg> = new Map()): void {
    const r = step(state, event);
    state = r.state;
    for (const e of r.effects) perform(e, msgs);
  }

  function perform(e: IngestEffect, msgs: ReadonlyMap<number, JsMsg>): void {
    switch (e.type) {
      case "start_consumer":
        consumer.start();
        loop = run();
        return;
      case "stop_consumer":
        stopping.abort(new Error("ingest stopped"));
        consumerStopped = consumer.stop();
        return;
      case "hold":
        buffer.set(e.seq, { m: msgs.get(e.seq)!, id: e.id, row: e.row, link: activeLink() });
        wake?.();
        return;
      case "ack":
        msgs.get(e.seq)!.ack();
        return;
      case "term":
        msgs.get(e.seq)!.term(e.reason);
        return;
      case "count":
        counters[e.counter].inc(e.n);
        return;
      case "announce":
        deps.onStored(e.stored.map((s) => ({ bytes: msgs.get(s.delivery)!.data, seq: s.seq })));
        return;
      case "log":
        log[e.level](e.fields, e.msg);
        return;
    }
  }

  const consumer = ingestConsumer(deps, (m) =>
    dispatch({ type: "delivered", seq: m.seq, subject: m.subject, data: m.data }, new Map([[m.seq, m]])),
  );

  async function run(): Promise<void> {
    while (state.phase === "running" || buffer.size > 0) {
      if (buffer.size === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 1000).unref();
        });
        wake = undefined;
        continue;
      }
      const batch = takeBatch(buffer, options.batchSize);
      // One span per batch, linked to each event's trace (a batch has no single parent).
      const links = batch.flatMap((r) => (r.link ? [r.link] : []));
      await withSpan(
        "audit.ingest.store",
        { links, attributes: { "messaging.batch.message_count": batch.length } },
        () =>
          storeBatch(batch, {
            pool,
            log,
            ackWaitMs: options.ackWaitMs,
            signal: stopping.signal,
            buffer,
            committed: (event, msgs) => queue.after(() => dispatch(event, msgs)),
          }),
      );
    }
    await queue.settled();
    dispatch({ type: "drained" });
  }

  return {
    async start() {
      dispatch({ type: "start" });
    },
    async stop() {
      dispatch({ type: "stop" });
      await consumerStopped;
      wake?.();
      await loop;
    },
  };
}

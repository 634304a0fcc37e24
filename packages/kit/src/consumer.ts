import {
  AckPolicy,
  type ConsumerMessages,
  type DeliverPolicy,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import { context, trace } from "@opentelemetry/api";
import { abortableSleep, type Backoff, backoff, retry } from "./backoff.js";
import type { Logger } from "./logger.js";
import type { NatsConnection } from "./nats.js";
import { extractTrace, SpanKind, SpanStatusCode, tracer, tracingEnabled, withSpan, type Span } from "./tracing.js";

/** Thrown by a handler for a message that redelivery can never fix: it is terminated, not redelivered. */
export class PoisonMessage extends Error {}

/** The durable consumer's settings; explicit acks always. */
export interface DurableConsumerSpec {
  stream: string;
  durable: string;
  /** Where a new consumer starts; an existing durable keeps its position across restarts. */
  deliverPolicy: DeliverPolicy;
  filterSubject?: string;
  ackWaitMs: number;
  maxAckPending: number;
  /** Omitted: the server's default (unlimited). */
  maxDeliver?: number;
  /** Re-applies ackWaitMs/maxAckPending to an existing consumer at every start, so configuration changes reach it. */
  retune?: boolean;
}

/** One message at a time: resolved → ack, PoisonMessage → term, anything else → nak after nakDelayMs. */
export interface HandleEach {
  handle(m: JsMsg): Promise<void>;
  nakDelayMs?: number;
}

/** Called synchronously as messages arrive; the receiver acknowledges them itself (e.g. after a batch commit). */
export interface ReceiveRaw {
  receive(m: JsMsg): void;
}

export type DurableConsumerOptions = {
  nc: NatsConnection;
  log: Logger;
  consumer: DurableConsumerSpec;
  /** Creates the stream when missing; called before the consumer is looked up, every time. */
  ensureStream?: () => Promise<void>;
  /** Messages pulled ahead of the handler (consume's max_messages). */
  maxMessages: number;
  /** Between attempts to (re)open the consumer; 250 ms doubling to 5 s unless said. */
  policy?: Backoff;
} & (HandleEach | ReceiveRaw);

export interface DurableConsumer {
  /** Creates the stream and the consumer if missing (start() does it too, retrying). */
  ensure(): Promise<void>;
  /** Starts consuming in the background; once: a stopped consumer stays stopped. */
  start(): void;
  /** Stops pulling; in handle mode also waits for the message in hand to be settled. */
  stop(): Promise<void>;
}

const DEFAULT_POLICY = backoff({ initialMs: 250, maxMs: 5000 });

/** Creates the stream (when asked) and the durable consumer if missing; retunes an existing one if asked. */
async function ensureConsumer(
  nc: NatsConnection,
  spec: DurableConsumerSpec,
  ensureStream: (() => Promise<void>) | undefined,
): Promise<void> {
  await ensureStream?.();
  const jsm = await jetstreamManager(nc, { timeout: 5000 });
  const tuning = { ack_wait: spec.ackWaitMs * 1e6, max_ack_pending: spec.maxAckPending };
  try {
    await jsm.consumers.info(spec.stream, spec.durable);
    if (spec.retune) await jsm.consumers.update(spec.stream, spec.durable, tuning);
    return;
  } catch (err) {
    if (!/consumer not found/i.test((err as Error).message)) throw err;
  }
  try {
    await jsm.consumers.add(spec.stream, {
      durable_name: spec.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: spec.deliverPolicy,
      ...(spec.filterSubject ? { filter_subject: spec.filterSubject } : {}),
      ...(spec.maxDeliver !== undefined ? { max_deliver: spec.maxDeliver } : {}),
      ...tuning,
    });
  } catch (err) {
    // Another replica created it between our look-up and add.
    if (!/already in use|exists/i.test((err as Error).message)) throw err;
  }
}

// Each message is handled in a CONSUMER span, child of the publisher's (its traceparent header).
const spanName = (durable: string) => `${durable} process`;
const spanOptions = (durable: string, m: JsMsg) => ({
  kind: SpanKind.CONSUMER,
  parent: extractTrace((k) => m.headers?.get(k)),
  attributes: {
    "messaging.system": "nats",
    "messaging.operation.name": "process",
    "messaging.destination.name": m.subject,
    "messaging.consumer.group.name": durable,
  },
});

/** Receive mode: the span covers the synchronous hand-over; a receiver that batches can link to it (activeLink). */
function tracedReceive(durable: string, receive: (m: JsMsg) => void): (m: JsMsg) => void {
  if (!tracingEnabled()) return receive;
  return (m) => {
    const opts = spanOptions(durable, m);
    const span = tracer().startSpan(spanName(durable), { kind: opts.kind, attributes: opts.attributes }, opts.parent);
    try {
      context.with(trace.setSpan(opts.parent, span), () => receive(m));
    } finally {
      span.end();
    }
  };
}

/** Handle mode: runs the handler, then acks, terms a poison message or naks for redelivery. */
function settle(log: Logger, durable: string, m: JsMsg, h: HandleEach): Promise<void> {
  if (!tracingEnabled()) return settleIn(log, durable, m, h);
  return withSpan(spanName(durable), spanOptions(durable, m), (span) => settleIn(log, durable, m, h, span));
}

async function settleIn(log: Logger, durable: string, m: JsMsg, h: HandleEach, span?: Span): Promise<void> {
  try {
    await h.handle(m);
    m.ack();
  } catch (err) {
    span?.recordException(err as Error);
    span?.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    if (err instanceof PoisonMessage) {
      log.error({ err: err.message, subject: m.subject, stream_seq: m.seq }, "poison message terminated");
      m.term();
      return;
    }
    log.warn(
      { err: (err as Error).message, subject: m.subject, stream_seq: m.seq, consumer: durable },
      "message not processed yet; it will be redelivered",
    );
    m.nak(h.nakDelayMs ?? 1000);
  }
}

/**
 * A durable pull consumer that keeps itself running. consume() is told to give up when the stream
 * or the consumer disappears (abort_on_missing_resource) rather than wait silently for it to come
 * back, so there is one recovery path for every failure: recreate what is missing, reopen, back off.
 */
export function createDurableConsumer(o: DurableConsumerOptions): DurableConsumer {
  const { nc, log, consumer: spec } = o;
  const policy = o.policy ?? DEFAULT_POLICY;
  const stopping = new AbortController();
  let messages: ConsumerMessages | undefined;
  let loop: Promise<void> | undefined;

  const ensure = () => ensureConsumer(nc, spec, o.ensureStream);

  async function open(): Promise<ConsumerMessages> {
    await ensure();
    const c = await jetstream(nc, { timeout: 5000 }).consumers.get(spec.stream, spec.durable);
    const base = { max_messages: o.maxMessages, abort_on_missing_resource: true };
    return "receive" in o ? c.consume({ ...base, callback: tracedReceive(spec.durable, o.receive) }) : c.consume(base);
  }

  async function run(): Promise<void> {
    const signal = stopping.signal;
    while (!signal.aborted) {
      let msgs: ConsumerMessages;
      try {
        msgs = await retry(open, {
          policy,
          signal,
          onError: (err) =>
            log.warn(
              { err: (err as Error).message, consumer: spec.durable },
              "cannot consume the stream yet; retrying",
            ),
        });
      } catch {
        return; // only an abort ends retry() without a limit on attempts
      }
      messages = msgs;
      if (signal.aborted) break;
      let err: unknown;
      if (!("receive" in o)) {
        try {
          for await (const m of msgs) {
            await settle(log, spec.durable, m, o);
            if (signal.aborted) break;
          }
        } catch (e) {
          err = e;
        }
      }
      err = (await msgs.closed()) ?? err;
      if (signal.aborted) break;
      log.warn(
        { err: err ? (err as Error).message : undefined, consumer: spec.durable },
        "consumer stopped; restarting",
      );
      await abortableSleep(policy(0), signal).catch(() => {});
    }
    await closeQuietly(messages);
  }

  return {
    ensure,
    start() {
      loop ??= run();
    },
    async stop() {
      stopping.abort(new Error("consumer stopped"));
      await closeQuietly(messages);
      await loop;
    },
  };
}

/**
 * Closing a consumer whose connection is going away (a stop racing a fresh open, NATS already down)
 * can wait forever for an answer that never comes; a stopping service must not hang on it.
 */
async function closeQuietly(messages: ConsumerMessages | undefined, waitMs = 2000): Promise<void> {
  if (!messages) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    messages.close().catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, waitMs);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
}

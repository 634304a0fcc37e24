import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  DiscardPolicy,
  type JetStreamClient,
} from "@nats-io/jetstream";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { AuditEventSchema, EVENT_TYPES, type AuditEvent, type EventType, type Severity } from "@orch/contracts";
import { abortableSleep, backoff } from "./backoff.js";
import { createMessageCodec } from "./codec/index.js";
import { withTx, type Pool, type PoolClient, type Queryable } from "./db.js";
import type { Clock, IdGenerator } from "./ids.js";
import type { Logger } from "./logger.js";
import type { Actor } from "./rpc.js";
import { extractTrace, injectTrace, SpanKind, tracingEnabled, withSpan } from "./tracing.js";

export const AUDIT_STREAM = "AUDIT";
export const auditSubject = (eventType: string) => `audit.${eventType}`;

export interface Ref {
  id: string;
  name: string;
  type: string;
}

export interface EventInput {
  type: EventType;
  summary: string;
  actor: Actor | Ref;
  target: Ref;
  metadata?: Record<string, unknown>;
  /** Defaults to the catalogue's severity for the type. */
  severity?: Severity;
}

export type Emit = (ev: EventInput) => Promise<AuditEvent>;

export interface Events {
  /** Writes an event into the outbox table using the caller's transaction. */
  emit(db: Queryable, ev: EventInput): Promise<AuditEvent>;
  /** Writes several events with one statement (a batch of operation ends), in order. */
  emitMany(db: Queryable, evs: readonly EventInput[]): Promise<AuditEvent[]>;
  /** Runs `fn` in a transaction with an `emit` bound to it, then wakes the relay. */
  tx<T>(fn: (db: PoolClient, emit: Emit) => Promise<T>): Promise<T>;
  /** Wakes the relay after a commit made outside `tx`. */
  kick(): void;
}

export interface Relay {
  start(): void;
  stop(): Promise<void>;
  kick(): void;
  /** Publishes whatever is pending now; resolves with the number published. For tests and shutdown. */
  flush(): Promise<number>;
}

// The services' codec: an event's metadata Struct costs a fraction of protobuf-es' reflective encoder.
const codec = createMessageCodec();
/** The event's bytes as a Buffer (pg sends a Buffer as bytea), without copying them. */
function encodeEvent(ev: AuditEvent): Buffer {
  const b = codec.encode(AuditEventSchema, ev);
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

function toRef(a: Actor | Ref): Ref {
  return { id: a.id, name: a.name, type: a.type };
}

export function buildEvent(ids: IdGenerator, clock: Clock, ev: EventInput): AuditEvent {
  return create(AuditEventSchema, {
    id: ids.next(),
    timestamp: new Date(clock.now()).toISOString(),
    eventType: ev.type,
    severity: ev.severity ?? EVENT_TYPES[ev.type].severity,
    summary: ev.summary,
    actor: toRef(ev.actor),
    target: ev.target,
    metadata: (ev.metadata ?? {}) as JsonObject,
  });
}

export function createEvents(deps: {
  pool: Pool;
  ids: IdGenerator;
  clock: Clock;
  relay?: Pick<Relay, "kick">;
}): Events {
  const traceparent = () => {
    let tp: string | null = null;
    injectTrace((k, v) => {
      if (k === "traceparent") tp = v;
    });
    return tp;
  };
  const emit = async (db: Queryable, input: EventInput) => {
    const ev = buildEvent(deps.ids, deps.clock, input);
    await db.query("INSERT INTO outbox (id, subject, payload, traceparent) VALUES ($1, $2, $3, $4)", [
      ev.id,
      auditSubject(ev.eventType),
      encodeEvent(ev),
      traceparent(),
    ]);
    return ev;
  };
  const emitMany = async (db: Queryable, inputs: readonly EventInput[]) => {
    const evs = inputs.map((input) => buildEvent(deps.ids, deps.clock, input));
    if (evs.length === 0) return evs;
    await db.query(
      "INSERT INTO outbox (id, subject, payload, traceparent) SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[])",
      [
        evs.map((ev) => ev.id),
        evs.map((ev) => auditSubject(ev.eventType)),
        evs.map((ev) => encodeEvent(ev)),
        evs.map(() => traceparent()),
      ],
    );
    return evs;
  };
  const kick = () => deps.relay?.kick();
  return {
    emit,
    emitMany,
    kick,
    async tx(fn) {
      const out = await withTx(deps.pool, (c) => fn(c, (ev) => emit(c, ev)));
      kick();
      return out;
    },
  };
}

/**
 * Creates the AUDIT stream, or brings an existing one to the configured replica count (R1 on a
 * single server, R3 on a cluster): a stream created before the setting changed would otherwise
 * keep its old durability for good. A failed scale-up (e.g. fewer nodes than replicas) throws, so
 * callers retry while the events wait in the outbox, rather than run below the configured count.
 */
export async function ensureAuditStream(
  nc: NatsConnection,
  opts: { replicas: number; maxAgeDays: number; log?: Logger },
): Promise<void> {
  const jsm = await jetstreamManager(nc, { timeout: 5000 });
  const cfg = {
    name: AUDIT_STREAM,
    subjects: ["audit.>"],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    num_replicas: opts.replicas,
    max_age: opts.maxAgeDays * 86_400 * 1e9,
    duplicate_window: 120 * 1e9,
  };
  let current: number;
  try {
    current = (await jsm.streams.info(AUDIT_STREAM)).config.num_replicas;
  } catch (err) {
    if (!/stream not found/i.test((err as Error).message)) throw err;
    try {
      await jsm.streams.add(cfg);
      return;
    } catch (err) {
      // Another replica created it between our check and add.
      if (!/already in use|exists/i.test((err as Error).message)) throw err;
      current = (await jsm.streams.info(AUDIT_STREAM)).config.num_replicas;
    }
  }
  if (current === opts.replicas) return;
  // Several services may do this at once; updating to the same count again is harmless.
  await jsm.streams.update(AUDIT_STREAM, { num_replicas: opts.replicas });
  opts.log?.info({ stream: AUDIT_STREAM, from: current, to: opts.replicas }, "audit stream replicas updated");
}

/**
 * Publishes outbox rows to JetStream (Nats-Msg-Id = event id, so a re-send after a crash between
 * publish and delete is deduplicated by the stream), then deletes them. Rows are claimed with
 * SKIP LOCKED so relays of several replicas share the work.
 */
export function createRelay(deps: {
  pool: Pool;
  nc: NatsConnection;
  log: Logger;
  stream: { replicas: number; maxAgeDays: number };
  pollMs?: number;
}): Relay {
  const { pool, nc, log } = deps;
  let js: JetStreamClient | undefined;
  let running = false;
  let wake: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let streamReady = false;

  async function drainOnce(): Promise<number> {
    if (!streamReady) {
      await ensureAuditStream(nc, { ...deps.stream, log });
      streamReady = true;
    }
    js ??= jetstream(nc, { timeout: 5000 });
    const jsc = js;
    return withTx(pool, async (c) => {
      const rows = (
        await c.query<OutboxRow>(
          "SELECT id, subject, payload, traceparent FROM outbox ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED",
        )
      ).rows;
      if (rows.length === 0) return 0;
      await Promise.all(rows.map((r) => publish(jsc, r)));
      await c.query("DELETE FROM outbox WHERE id = ANY($1)", [rows.map((r) => r.id)]);
      return rows.length;
    });
  }

  function publish(jsc: JetStreamClient, r: OutboxRow) {
    const send = (headers?: ReturnType<typeof natsHeaders>) =>
      jsc.publish(r.subject, new Uint8Array(r.payload), {
        msgID: r.id,
        timeout: 5000,
        ...(headers ? { headers } : {}),
      });
    if (!tracingEnabled()) return send();
    // A child of the request that wrote the event; its own context goes on to the consumers.
    const parent = extractTrace((k) => (k === "traceparent" ? (r.traceparent ?? undefined) : undefined));
    const attributes = {
      "messaging.system": "nats",
      "messaging.destination.name": r.subject,
      "messaging.message.id": r.id,
    };
    return withSpan("outbox.publish", { kind: SpanKind.PRODUCER, parent, attributes }, () => {
      const headers = natsHeaders();
      injectTrace((k, v) => headers.set(k, v));
      return send(headers);
    });
  }

  async function run() {
    let failures = 0;
    while (running) {
      let n = 0;
      try {
        n = await drainOnce();
        if (failures) log.info("outbox relay recovered");
        failures = 0;
      } catch (err) {
        if (!failures) log.warn({ err: (err as Error).message }, "outbox relay cannot publish yet; will retry");
        await abortableSleep(RELAY_RETRY(failures++));
        continue;
      }
      if (n === 0 && running) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, deps.pollMs ?? 500).unref();
        });
        wake = undefined;
      }
    }
  }

  return {
    start() {
      if (running) return;
      running = true;
      loop = run();
    },
    kick() {
      wake?.();
    },
    async flush() {
      let total = 0;
      for (let n = await drainOnce(); n > 0; n = await drainOnce()) total += n;
      return total;
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
      // Best effort: publish what is pending now so a clean shutdown leaves nothing behind.
      await this.flush().catch(() => 0);
    },
  };
}

interface OutboxRow {
  id: string;
  subject: string;
  payload: Buffer;
  traceparent: string | null;
}

/** Between failed drains: 100 ms doubling to 2 s (the relay's events are waiting, not lost). */
const RELAY_RETRY = backoff({ initialMs: 100, maxMs: 2000 });

import { DeliverPolicy, type JsMsg } from "@nats-io/jetstream";
import {
  activeLink,
  AUDIT_STREAM,
  createDurableConsumer,
  createEvents,
  createPool,
  migrate,
  SpanKind,
  startTracing,
  systemClock,
  ulidGenerator,
  withSpan,
  withTx,
  type TraceLink,
} from "@orch/kit";
import { createTestDatabase, eventually, silentLogger, startNats } from "@orch/kit/testing";
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import pg from "pg";
import t from "tap";
import { createRelay } from "../src/outbox.js";

const db = await createTestDatabase("orch_tracing");
t.teardown(() => db.drop());
// Created before tracing starts: keeps pg's own query method (no cost when tracing is off).
const untraced = createPool({ url: db.url, schema: "kit_t" });
t.teardown(() => untraced.end());

const exporter = new InMemorySpanExporter();
const tracing = startTracing(
  "tracing-jetstream-test",
  { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" },
  { spanProcessor: new SimpleSpanProcessor(exporter) },
);
t.teardown(() => tracing.shutdown());

const nats = await startNats();
t.teardown(() => nats.stop());
const nc = await nats.connect();
const log = silentLogger();
const pool = createPool({ url: db.url, schema: "kit_t" });
t.teardown(() => pool.end());
await migrate(pool, "kit_t", null);

const spans = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
const idOf = (s: ReadableSpan) => s.spanContext().spanId;

t.test("a pool created with tracing off keeps pg's own query", async (t) => {
  t.equal(untraced.query, pg.Pool.prototype.query);
  t.not(pool.query, pg.Pool.prototype.query);
});

t.test("queries are pg.query CLIENT spans under the active span, without parameter values", async (t) => {
  exporter.reset();
  let root = "";
  await withSpan("root", {}, async (span) => {
    root = span!.spanContext().spanId;
    await pool.query("SELECT $1::text AS v", ["secret-value"]);
    await withTx(pool, (c) => c.query("INSERT INTO jobs (name, last_run_at) VALUES ($1, 1)", ["j1"]));
    await pool.query("SELECT nope FROM nowhere").catch(() => {});
  });
  const q = spans("pg.query");
  t.same(
    q.map((s) => s.attributes["db.operation"]),
    ["SELECT", "BEGIN", "INSERT", "COMMIT", "SELECT"],
    "one span per query, pool.query not counted twice",
  );
  t.ok(
    q.every((s) => s.kind === SpanKind.CLIENT && parentOf(s) === root && s.attributes["db.system"] === "postgresql"),
  );
  t.equal(q[0]!.attributes["db.statement"], "SELECT $1::text AS v");
  t.notOk(
    q.some((s) => JSON.stringify(s.attributes).includes("secret-value")),
    "parameter values are never recorded",
  );
  t.equal(q[4]!.status.code, 2, "a failed query is an error span");
});

t.test("a query outside any trace (relay polls, background jobs) makes no span", async (t) => {
  exporter.reset();
  await pool.query("SELECT 1");
  await withTx(pool, (c) => c.query("SELECT 2"));
  t.same(spans("pg.query"), []);
});

t.test("an event carries its request's trace through the outbox to JetStream consumers", async (t) => {
  const relay = createRelay({ pool, nc, log, stream: { replicas: 1, maxAgeDays: 1 } });
  const events = createEvents({ pool, ids: ulidGenerator(systemClock), clock: systemClock });
  await relay.flush(); // creates the stream
  const handled: string[] = [];
  const worker = createDurableConsumer({
    nc,
    log,
    consumer: {
      stream: AUDIT_STREAM,
      durable: "worker",
      deliverPolicy: DeliverPolicy.All,
      ackWaitMs: 30_000,
      maxAckPending: 16,
    },
    maxMessages: 16,
    handle: async (m) => {
      await pool.query("SELECT 1");
      handled.push(m.subject);
    },
  });
  const links: Array<TraceLink | undefined> = [];
  const batcher = createDurableConsumer({
    nc,
    log,
    consumer: {
      stream: AUDIT_STREAM,
      durable: "batcher",
      deliverPolicy: DeliverPolicy.All,
      ackWaitMs: 30_000,
      maxAckPending: 16,
    },
    maxMessages: 16,
    receive: (m: JsMsg) => {
      links.push(activeLink());
      m.ack();
    },
  });
  t.teardown(async () => {
    await worker.stop();
    await batcher.stop();
  });
  exporter.reset();

  let request = "";
  let traceId = "";
  await withSpan("request", { kind: SpanKind.SERVER }, async (span) => {
    request = span!.spanContext().spanId;
    traceId = span!.spanContext().traceId;
    await events.tx((_c, emit) =>
      emit({
        type: "operator.created",
        summary: "x",
        actor: { id: "a", name: "a", type: "operator" },
        target: { id: "o", name: "o", type: "operator" },
      }),
    );
  });
  const row = await pool.query<{ traceparent: string }>("SELECT traceparent FROM outbox");
  t.match(row.rows[0]?.traceparent, new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`), "the row keeps the request's trace");

  t.equal(await relay.flush(), 1);
  const [publish] = spans("outbox.publish");
  t.equal(publish?.kind, SpanKind.PRODUCER);
  t.equal(publish?.spanContext().traceId, traceId);
  t.equal(parentOf(publish!), request, "the publish is a child of the request that wrote the event");

  worker.start();
  batcher.start();
  await eventually(() => handled.length === 1 && links.length === 1);
  await eventually(() => spans("worker process").length === 1 && spans("batcher process").length === 1);
  const [processed] = spans("worker process");
  t.equal(processed!.kind, SpanKind.CONSUMER);
  t.equal(parentOf(processed!), idOf(publish!), "the consumer continues the publish's trace");
  t.equal(processed!.attributes["messaging.destination.name"], "audit.operator.created");
  const inHandler = spans("pg.query").filter((s) => parentOf(s) === idOf(processed!));
  t.equal(inHandler.length, 1, "the handler's query is inside the consumer span");
  const [received] = spans("batcher process");
  t.equal(parentOf(received!), idOf(publish!));
  t.equal(links[0]?.context.spanId, idOf(received!), "a batching receiver can link to each message's span");
  await relay.stop();
});

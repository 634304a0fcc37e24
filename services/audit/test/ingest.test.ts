import t from "tap";
import pg from "pg";
import { fromBinary } from "@bufbuild/protobuf";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { AuditEventSchema } from "@orch/contracts";
import { AUDIT_STREAM, withTx } from "@orch/kit";
import { createTestDatabase, eventually, startNats } from "@orch/kit/testing";
import { toRow } from "../src/convert.js";
import { eventsDb } from "../src/db/events.js";
import { countRows, eventFactory, publisher, startAudit } from "./harness.js";

// Durability of ingest against a real JetStream and Postgres: stops, crashes between insert and
// ack, NATS restarts, Postgres outages and poison messages never lose or duplicate an event.
const nats = await startNats();
const db = await createTestDatabase();
const nc = await nats.connect("publisher");
const publish = await publisher(nc);
const event = eventFactory();
const admin = new pg.Client({
  connectionString: process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
});
await admin.connect();
const reader = new pg.Pool({ connectionString: db.url, max: 2, options: "-c search_path=audit" });
reader.on("error", () => {});
reader.on("connect", (c) => c.on("error", () => {}));
t.teardown(async () => {
  await reader.end();
  await admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`).catch(() => {});
  await admin.end();
  await db.drop();
  await nats.stop();
});

const rows = () => countRows(reader);
const metric = async (
  svc: { deps: { metrics: { getSingleMetricAsString(n: string): Promise<string> } } },
  name: string,
) => Number(/ (\d+)$/m.exec(await svc.deps.metrics.getSingleMetricAsString(name))?.[1] ?? 0);

t.test("10,000 events published while the service is stopped part of the time are all stored once", async (t) => {
  const all = Array.from({ length: 10_000 }, (_, i) => event({ type: i % 2 ? "agent.connected" : "operator.created" }));
  let svc = await startAudit(nats, db);
  const base = await rows();
  await publish(all.slice(0, 4000));
  await eventually(async () => (await rows()) >= base + 1000, 20_000);
  await svc.stop(); // mid-ingest: what it holds unacknowledged is redelivered to the next one
  await publish(all.slice(4000, 7000));
  svc = await startAudit(nats, db);
  t.teardown(() => svc.stop());
  await publish(all.slice(7000));
  await eventually(async () => (await rows()) === base + 10_000, 45_000, 200);
  const ids = all.map((e) => e.id);
  const found = await reader.query<{ n: number }>(
    "SELECT count(DISTINCT id)::int AS n FROM events WHERE id = ANY($1)",
    [ids],
  );
  t.equal(found.rows[0]!.n, 10_000, "every published id is stored");
  t.equal(await rows(), base + 10_000, "and nothing twice");
});

t.test("a crash between insert and ack: the redelivered events are stored once", async (t) => {
  const before = await rows();
  const batch = Array.from({ length: 300 }, () => event({ type: "secret.created" }));
  await publish(batch);
  // Play the part of a replica that inserts a batch and dies before acknowledging it.
  const consumer = await jetstream(nc).consumers.get(AUDIT_STREAM, "audit");
  const msgs = await consumer.fetch({ max_messages: 300, expires: 5000 });
  const pool = new pg.Pool({ connectionString: db.url, max: 1, options: "-c search_path=audit" });
  const got = [];
  for await (const m of msgs) {
    got.push(m);
    if (got.length === 300) break;
  }
  const decoded = got.map((m) => fromBinary(AuditEventSchema, m.data));
  await withTx(pool, (c) =>
    eventsDb.insert(
      c,
      decoded.map((e) => toRow(e).row),
    ),
  );
  await pool.end();
  t.equal(decoded.length, 300, "fetched the whole batch without acking");
  t.equal(await rows(), before + 300, "rows committed");

  const svc = await startAudit(nats, db);
  t.teardown(() => svc.stop());
  // ack_wait is 2 s in tests: the stream redelivers, the service stores nothing new and acks.
  await eventually(async () => (await metric(svc, "audit_events_duplicate_total")) >= 300, 20_000, 100);
  const jsm = await jetstreamManager(nc);
  await eventually(async () => {
    const info = await jsm.consumers.info(AUDIT_STREAM, "audit");
    return info.num_ack_pending === 0 && info.num_pending === 0;
  }, 20_000);
  t.equal(await rows(), before + 300, "still one row per event");
  t.equal(await metric(svc, "audit_events_stored_total"), 0, "nothing was stored a second time");
});

t.test("survives a NATS restart: events published before and after are stored", async (t) => {
  const svc = await startAudit(nats, db);
  t.teardown(() => svc.stop());
  const before = await rows();
  const a = Array.from({ length: 200 }, () => event());
  await publish(a);
  await nats.restart();
  const b = Array.from({ length: 200 }, () => event());
  await eventually(
    async () => {
      await publish(b);
      return true;
    },
    20_000,
    250,
  );
  await eventually(async () => (await rows()) === before + 400, 40_000, 200);
  t.pass("400 stored after the restart");
});

t.test("survives a Postgres outage without acking what it could not store", async (t) => {
  const svc = await startAudit(nats, db);
  t.teardown(() => svc.stop());
  const before = await rows();
  const batch = Array.from({ length: 500 }, () => event({ type: "drift.detected" }));
  await admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
  try {
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [db.name],
    );
    await publish(batch);
    // Longer than ack_wait: the service must keep the batch from being redelivered elsewhere.
    await new Promise((r) => setTimeout(r, 3000));
  } finally {
    await admin.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
  }
  await eventually(async () => (await rows()) === before + 500, 30_000, 200);
  const jsm = await jetstreamManager(nc);
  await eventually(async () => (await jsm.consumers.info(AUDIT_STREAM, "audit")).num_ack_pending === 0, 20_000);
  t.equal(await rows(), before + 500);
});

t.test("poison messages are terminated without blocking the events after them", async (t) => {
  const svc = await startAudit(nats, db);
  t.teardown(() => svc.stop());
  const js = jetstream(nc);
  await js.publish("audit.garbage", new Uint8Array([0xff, 0xff, 0xff, 0x01]));
  const nul = event({
    type: "operator.created",
    summary: "nul \u0000 inside",
    metadata: { "k\u0000": "v\u0000", nested: { list: ["a\u0000"] } },
  });
  const fine = event({ type: "operator.removed" });
  await publish([nul, fine]);
  await eventually(
    async () => (await reader.query("SELECT 1 FROM events WHERE id = $1", [fine.id])).rowCount === 1,
    20_000,
  );
  const stored = (
    await reader.query<{ summary: string; metadata: unknown }>("SELECT summary, metadata FROM events WHERE id = $1", [
      nul.id,
    ])
  ).rows[0];
  t.equal(stored?.summary, "nul \uFFFD inside", "NUL replaced rather than the event lost");
  t.same(stored?.metadata, { "k\uFFFD": "v\uFFFD", nested: { list: ["a\uFFFD"] } });
  await eventually(async () => (await metric(svc, "audit_events_rejected_total")) === 1, 10_000);
});

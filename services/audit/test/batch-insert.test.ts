import t from "tap";
import pg from "pg";
import { equals } from "@bufbuild/protobuf";
import { AuditEventSchema } from "@orch/contracts";
import { migrate } from "@orch/kit";
import { createTestDatabase, eventually } from "@orch/kit/testing";
import { toEvent, toRow } from "../src/convert.js";
import { eventsDb, type EventRow, isKnownId } from "../src/db/events.js";
import { AUDIT_MIGRATIONS, countRows, eventFactory } from "./harness.js";

// The batch insert on a real Postgres: one statement that takes the ingest lock, skips known ids
// and stores every field; a batch whose commit failed is stored once when it comes again.
const db = await createTestDatabase();
const pool = new pg.Pool({ connectionString: db.url, max: 4, options: "-c search_path=audit" });
pool.on("error", () => {});
await migrate(pool, "audit", AUDIT_MIGRATIONS);
t.teardown(async () => {
  await pool.end();
  await db.drop();
});

const event = eventFactory();
const rowsOf = (n: number, type = "agent.connected"): EventRow[] =>
  Array.from({ length: n }, () => toRow(event({ type })).row);
const storedIds = async (ids: string[]) =>
  (await pool.query<{ id: string }>("SELECT id FROM events WHERE id = ANY($1) ORDER BY id", [ids])).rows.map(
    (r) => r.id,
  );
const sorted = (xs: string[]) => [...xs].sort();

t.test("a batch with duplicates of stored ids stores each id once and returns only the new ones", async (t) => {
  const before = await countRows(pool);
  const old = rowsOf(50);
  const first = await eventsDb.insert(pool, old);
  t.equal(first.length, 50, "the first batch is stored");
  const fresh = rowsOf(70);
  // Stored ids, new ids, and an id repeated inside the batch itself.
  const again = await eventsDb.insert(pool, [...old.slice(0, 25), ...fresh, fresh[0]!, ...old.slice(25)]);
  t.same(sorted(again.map((r) => r.id)), sorted(fresh.map((r) => r.id)), "only the new ids come back");
  t.equal(await countRows(pool), before + 120, "nothing is stored twice");
  const firstMax = Math.max(...first.map((r) => r.seq));
  t.ok(
    again.every((r) => r.seq > firstMax),
    "the later batch is stored after the earlier one",
  );
  t.equal(new Set(again.map((r) => r.seq)).size, 70, "each new row has its own seq");
});

t.test("the plain insert stores a batch of new ids, and refuses one holding a stored id whole", async (t) => {
  const before = await countRows(pool);
  const fresh = rowsOf(40);
  const ins = await eventsDb.insertNew(pool, fresh);
  t.same(sorted(ins.map((r) => r.id)), sorted(fresh.map((r) => r.id)), "every new row comes back");
  t.equal(new Set(ins.map((r) => r.seq)).size, 40, "each with its own seq");
  const more = rowsOf(30);
  const err = await eventsDb.insertNew(pool, [...more, fresh[7]!]).catch((e: unknown) => e);
  t.ok(isKnownId(err), "a stored id makes it fail with the error isKnownId recognises");
  t.same(await storedIds(more.map((r) => r.id)), [], "having stored nothing of that batch");
  const again = await eventsDb.insert(pool, [...more, fresh[7]!]);
  t.equal(again.length, 30, "the idempotent insert then stores the new ones");
  t.equal(await countRows(pool), before + 70, "and nothing twice");
  t.notOk(
    isKnownId(Object.assign(new Error("x"), { code: "23505", constraint: "other" })),
    "other unique violations are not taken for it",
  );
});

t.test("every field round-trips through the batch insert", async (t) => {
  const full = event({
    type: "state.apply.succeeded",
    severity: "warning",
    summary: 'ünïcødé summary — with "quotes", back\\slashes, {braces}, commas, and NULL',
    actor: { id: "node-0001", name: 'web "1"', type: "agent" },
    // Array-literal hazards: NULL, quotes, backslashes, braces, commas, outer spaces, empty.
    target: { id: "m,1", name: " module {x} ", type: "NULL" },
    metadata: {
      n: 42.5,
      neg: -1,
      ok: true,
      nothing: null,
      list: [1, "two", false, null, { deep: ["x"] }],
      nested: { a: { b: { c: "d" } } },
      empty: {},
      "key with spaces": "",
      quoted: '"\\"{}',
    },
  });
  const withNul = event({ type: "secret.used", summary: "nul\u0000inside", metadata: { "k\u0000": "v\u0000" } });
  const plain = event({ type: "agent.connected" });
  const ins = await eventsDb.insert(
    pool,
    [full, withNul, plain].map((e) => toRow(e).row),
  );
  t.equal(ins.length, 3);
  const read = await pool.query<EventRow>(
    "SELECT id, ts, event_type, severity, summary, actor_id, actor_name, actor_type, target_id, target_name, target_type, metadata FROM events WHERE id = ANY($1)",
    [[full.id, withNul.id, plain.id]],
  );
  const byId = new Map(read.rows.map((r) => [r.id, toEvent(r)]));
  t.ok(equals(AuditEventSchema, byId.get(full.id)!, full), "every field of a full event comes back equal");
  t.ok(equals(AuditEventSchema, byId.get(plain.id)!, plain), "a plain event comes back equal");
  const nul = byId.get(withNul.id)!;
  t.equal(nul.summary, "nul\uFFFDinside", "a NUL in text is replaced, not refused");
  t.same(nul.metadata, { "k\uFFFD": "v\uFFFD" }, "and in metadata keys and values");
});

t.test("a batch whose commit failed is stored once when it is delivered again", async (t) => {
  const before = await countRows(pool);
  const batch = rowsOf(200, "secret.created");
  const ids = batch.map((r) => r.id);
  // Hold the ingest lock so the batch's statement is in flight when its connection dies.
  const holder = await pool.connect();
  await holder.query("BEGIN");
  await eventsDb.lockIngest(holder);
  const victim = new pg.Client({ connectionString: db.url, options: "-c search_path=audit" });
  victim.on("error", () => {});
  await victim.connect();
  const pid = Number((await victim.query("SELECT pg_backend_pid() AS pid")).rows[0].pid);
  const attempt = eventsDb.insert(victim, batch);
  attempt.catch(() => {});
  await eventually(
    async () =>
      (await pool.query("SELECT 1 FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted", [pid]))
        .rowCount === 1,
    10_000,
  );
  await pool.query("SELECT pg_terminate_backend($1)", [pid]);
  await t.rejects(attempt, "the first attempt fails");
  await holder.query("COMMIT");
  holder.release();
  t.same(await storedIds(ids), [], "a failed attempt stores nothing");
  const redelivered = await eventsDb.insert(pool, batch);
  t.equal(redelivered.length, 200, "the redelivered batch is stored");
  const third = await eventsDb.insert(pool, batch);
  t.equal(third.length, 0, "a further redelivery adds nothing");
  t.same(await storedIds(ids), sorted(ids), "every id is stored");
  t.equal(await countRows(pool), before + 200, "once");
});

t.test("a batch draws its seqs only once it holds the ingest lock: seq order is commit order", async (t) => {
  const holder = await pool.connect();
  t.teardown(() => holder.release());
  await holder.query("BEGIN");
  await eventsDb.lockIngest(holder);
  const waiting = new pg.Client({ connectionString: db.url, options: "-c search_path=audit" });
  await waiting.connect();
  t.teardown(() => waiting.end());
  const pid = Number((await waiting.query("SELECT pg_backend_pid() AS pid")).rows[0].pid);
  const later = eventsDb.insert(waiting, rowsOf(30));
  await eventually(
    async () =>
      (await pool.query("SELECT 1 FROM pg_locks WHERE pid = $1 AND locktype = 'advisory' AND NOT granted", [pid]))
        .rowCount === 1,
    10_000,
  );
  // The lock holder inserts after the waiting batch started, and commits first.
  const earlier = await eventsDb.insert(holder, rowsOf(30));
  await holder.query("COMMIT");
  const after = await later;
  t.equal(after.length, 30);
  t.ok(
    Math.min(...after.map((r) => r.seq)) > Math.max(...earlier.map((r) => r.seq)),
    "the batch committed later has the higher seqs",
  );
});

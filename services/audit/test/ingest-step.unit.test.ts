import t from "tap";
import { create, toBinary } from "@bufbuild/protobuf";
import { AuditEventSchema } from "@orch/contracts";
import { ulid } from "ulid";
import { type IngestEffect, type IngestState, initialIngest, step } from "../src/ingest-step.js";

// The ingest decisions without NATS or Postgres: what a delivery and a commit turn into.
const TS = "2026-05-28T10:00:00.000Z";
const ID = ulid(Date.parse(TS));
const event = (over: Record<string, unknown> = {}) =>
  toBinary(
    AuditEventSchema,
    create(AuditEventSchema, {
      id: ID,
      timestamp: TS,
      eventType: "agent.approved",
      severity: "info",
      summary: "approved",
      ...over,
    }),
  );
const kinds = (effects: IngestEffect[]) => effects.map((e) => e.type);

t.test("start, stop and drain", async (t) => {
  let s: IngestState = initialIngest;
  let r = step(s, { type: "start" });
  t.same(r.state, { phase: "running" });
  t.same(kinds(r.effects), ["start_consumer"]);
  s = r.state;
  t.same(step(s, { type: "start" }).effects, [], "a second start does nothing");
  t.same(step(s, { type: "drained" }).state, { phase: "running" }, "an empty buffer while running is no end");
  r = step(s, { type: "stop" });
  t.same(r.state, { phase: "draining" }, "held events are still stored after a stop");
  t.same(kinds(r.effects), ["stop_consumer"]);
  s = r.state;
  t.same(step(s, { type: "stop" }).effects, [], "a second stop does nothing");
  t.same(step(s, { type: "drained" }).state, { phase: "stopped" });
  t.same(step(initialIngest, { type: "stop" }).state, { phase: "stopped" }, "a stop before start stops the consumer");
});

t.test("a valid delivery is held, with its row", async (t) => {
  const r = step({ phase: "running" }, { type: "delivered", seq: 7, subject: "audit.agent.approved", data: event() });
  t.same(kinds(r.effects), ["hold"]);
  const hold = r.effects[0] as Extract<IngestEffect, { type: "hold" }>;
  t.equal(hold.seq, 7);
  t.equal(hold.id, ID);
  t.equal(hold.row.event_type, "agent.approved");
  t.equal(hold.row.ts, Date.parse(TS));
});

t.test("an event whose timestamp is far from its id time is held with a warning", async (t) => {
  const r = step(
    { phase: "running" },
    { type: "delivered", seq: 1, subject: "s", data: event({ timestamp: "2001-01-01T00:00:00Z" }) },
  );
  t.same(kinds(r.effects), ["log", "hold"]);
  t.match(r.effects[0], { level: "warn", fields: { id: ID, event_type: "agent.approved" } });
});

t.test("what is not a valid AuditEvent is counted and terminated", async (t) => {
  for (const [label, data] of [
    ["garbage", new Uint8Array([0xff, 0xff, 0xff])],
    ["not a ULID", event({ id: "nope" })],
    ["a lower-case ULID", event({ id: ID.toLowerCase() })],
    ["no event type", event({ eventType: "" })],
  ] as const) {
    const r = step({ phase: "running" }, { type: "delivered", seq: 3, subject: "audit.x", data });
    t.same(kinds(r.effects), ["log", "count", "term"], label);
    t.match(r.effects, [
      { level: "error", fields: { subject: "audit.x", stream_seq: 3 } },
      { counter: "rejected", n: 1 },
      { seq: 3, reason: "invalid AuditEvent" },
    ]);
  }
});

t.test("a commit acks what is stored, terminates what was refused, counts and announces", async (t) => {
  const r = step(
    { phase: "running" },
    {
      type: "committed",
      batch: [
        { seq: 10, id: "a" },
        { seq: 11, id: "b" },
        { seq: 12, id: "c" },
        { seq: 13, id: "a" },
        { seq: 14, id: "d" },
      ],
      inserted: [
        { id: "a", seq: 100 },
        { id: "c", seq: 101 },
      ],
      refused: new Set(["b"]),
    },
  );
  t.same(r.effects, [
    { type: "ack", seq: 10 },
    { type: "term", seq: 11, reason: "refused by Postgres" },
    { type: "ack", seq: 12 },
    { type: "ack", seq: 13 },
    { type: "ack", seq: 14 },
    { type: "count", counter: "rejected", n: 1 },
    { type: "count", counter: "stored", n: 2 },
    { type: "count", counter: "duplicates", n: 2 },
    // "a" came twice: it is announced from its later delivery, as the batch stored that one.
    {
      type: "announce",
      stored: [
        { delivery: 13, seq: 100 },
        { delivery: 12, seq: 101 },
      ],
    },
  ]);
});

t.test("a commit that stored nothing new announces nothing", async (t) => {
  const r = step(
    { phase: "draining" },
    { type: "committed", batch: [{ seq: 1, id: "a" }], inserted: [], refused: new Set() },
  );
  t.same(kinds(r.effects), ["ack", "count", "count", "count"]);
  t.same(r.state, { phase: "draining" });
});

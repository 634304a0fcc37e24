import t from "tap";
import pg from "pg";
import { withTx } from "@orch/kit";
import { createTestDatabase, ed25519, eventually, startNats } from "@orch/kit/testing";
import { call, login, startAuth, startGateway } from "../../gateway/test/harness.js";
import { toRow } from "../src/convert.js";
import { eventsDb } from "../src/db/events.js";
import { eventFactory, publisher, startAudit } from "./harness.js";
import { openSse, type SseStream } from "./sse.js";

// GET /api/v1/audit/stream (SSE) against the real service: backfill then live, filters,
// reconnecting with Last-Event-ID misses nothing even when events arrive out of id order.
const nats = await startNats();
const db = await createTestDatabase();
const adminKey = ed25519();
const auth = await startAuth(nats, db, adminKey);
const audit = await startAudit(nats, db);
const gw = await startGateway(nats);
const streams: SseStream[] = [];
t.teardown(async () => {
  for (const s of streams) s.close();
  await gw.stop();
  await audit.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});
const token = await login(gw.url, adminKey);
const nc = await nats.connect("publisher");
const publish = await publisher(nc);
const event = eventFactory();
const pool = new pg.Pool({ connectionString: db.url, max: 2, options: "-c search_path=audit" });
t.teardown(() => pool.end());

const stored = async (ids: string[]) =>
  Number((await pool.query("SELECT count(*) FROM events WHERE id = ANY($1)", [ids])).rows[0].count) === ids.length;
const open = async (qs = "", o: { lastEventId?: string; base?: string } = {}) => {
  const s = await openSse(`${o.base ?? gw.url}/api/v1/audit/stream${qs}`, { token, ...o });
  streams.push(s);
  return s;
};
const ids = (s: SseStream) => s.events.map((e) => e.id);

t.test("bad requests are 400 problems before any stream starts; no token is 401", async (t) => {
  for (const [qs, code, parameter, lastEventId] of [
    ["?cursor=nope", "invalid_cursor", "cursor", undefined],
    ["", "invalid_cursor", "Last-Event-ID", "nope"],
    ["?category=agent.", "invalid_filter", "category", undefined],
    ["?limit=5", "invalid_filter", "limit", undefined],
    ["?after=today", "invalid_timestamp", "after", undefined],
  ] as const) {
    const s = await open(qs, lastEventId ? { lastEventId } : {});
    t.equal(s.status, 400, `${qs} ${lastEventId ?? ""}`);
    t.equal(s.body.code, code);
    t.equal(s.body.parameter, parameter);
  }
  const anon = await openSse(`${gw.url}/api/v1/audit/stream`);
  t.equal(anon.status, 401);
});

t.test("without a cursor the stream starts now and delivers live events as SSE", async (t) => {
  const old = event({ type: "agent.connected" });
  await publish([old]);
  await eventually(() => stored([old.id]));
  const s = await open();
  t.equal(s.status, 200);
  t.match(s.headers["content-type"], /^text\/event-stream/);
  const live = [event({ type: "agent.approved", metadata: { k: "v" } }), event({ type: "secret.created" })];
  await publish(live);
  await s.waitFor(2);
  t.same(
    ids(s),
    live.map((e) => e.id),
    "only what was stored after the stream opened",
  );
  t.equal(s.events[0]!.event, "audit");
  t.match(s.events[0]!.data, {
    id: live[0]!.id,
    event_type: "agent.approved",
    timestamp: live[0]!.timestamp,
    metadata: { k: "v" },
    actor: { type: "system" },
  });
  s.close();
});

t.test("with a cursor: the backlog (several pages) then live events, each exactly once", async (t) => {
  const backlog = Array.from({ length: 1200 }, (_, i) => event({ type: "walk.step", metadata: { i } }));
  await publish(backlog);
  await eventually(() => stored(backlog.map((e) => e.id)), 30_000);
  const s = await open(`?cursor=${backlog[99]!.id}&category=walk`);
  await s.waitFor(1100);
  const later = Array.from({ length: 50 }, () => event({ type: "walk.step" }));
  const noise = [event({ type: "agent.connected" })];
  await publish([...later, ...noise]);
  await s.waitFor(1150);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(s.events.length, 1150, "nothing extra");
  t.same(
    ids(s),
    [...backlog.slice(100), ...later].map((e) => e.id),
    "in order, no gap, no repeat, no other category",
  );
  s.close();
});

t.test("reconnecting with Last-Event-ID misses nothing, even an event that arrives out of id order", async (t) => {
  const s1 = await open("?category=drift");
  const first = [event({ type: "drift.detected" }), event({ type: "drift.detected" })];
  await publish(first);
  await s1.waitFor(2);
  const lastSeen = s1.events.at(-1)!.id;
  // An event minted before the last one seen (a relay that was behind), stored only now.
  const straggler = event({ type: "drift.cleared", at: Date.parse(first[0]!.timestamp) - 60_000 });
  t.ok(straggler.id < lastSeen, "its id sorts before the last id the client saw");
  s1.close();
  await s1.ended;
  const missed = [event({ type: "drift.detected" })];
  await publish([straggler, ...missed, event({ type: "agent.connected" })]);
  await eventually(() => stored([straggler.id, ...missed.map((e) => e.id)]));

  const s2 = await open("?category=drift", { lastEventId: lastSeen });
  await s2.waitFor(2);
  const live = event({ type: "drift.detected" });
  await publish([live]);
  await s2.waitFor(3);
  await new Promise((r) => setTimeout(r, 300));
  t.same(
    ids(s2).sort(),
    [straggler.id, missed[0]!.id, live.id].sort(),
    "the straggler, the missed one and the live one, nothing seen before",
  );
  s2.close();
});

t.test("an event stored without a feed message (crash between commit and publish) still arrives", async (t) => {
  const s = await open("?event_type=channel.tested");
  const silent = event({ type: "channel.tested" });
  await withTx(pool, (c) => eventsDb.insert(c, [toRow(silent).row]));
  await s.waitFor(1, 15_000);
  t.same(ids(s), [silent.id], "picked up by the periodic re-read");
  s.close();
});

t.test("stopping the gateway ends open streams instead of hanging", async (t) => {
  const gw2 = await startGateway(nats);
  const s = await open("", { base: gw2.url });
  t.equal(s.status, 200);
  await gw2.stop();
  await s.ended;
  t.pass("stream closed by the gateway shutdown");
});

t.test("a client cannot go unnoticed: GET /audit and the stream agree", async (t) => {
  const r = await call(gw.url, "GET", "/api/v1/audit?category=drift&limit=10", { token });
  t.equal(r.status, 200);
  t.equal(r.body.events.length, 5, "2 first + straggler + missed + live");
});

import t from "tap";
import type { JsonObject } from "@bufbuild/protobuf";
import { createTestDatabase, ed25519, eventually, startNats } from "@orch/kit/testing";
import { call, login, startAuth, startGateway } from "../../gateway/test/harness.js";
import { matchesFilter, type FilterValues } from "../../gateway/src/routes/audit-query.js";
import { eventFactory, publisher, startAudit, type EventSpec } from "./harness.js";

// GET /api/v1/audit against the real service (in-process audit + auth + gateway, real NATS and
// Postgres, events ingested from JetStream): every filter, the cursor walk, every 400.
const nats = await startNats();
const db = await createTestDatabase();
const adminKey = ed25519();
const auth = await startAuth(nats, db, adminKey);
const audit = await startAudit(nats, db);
const gw = await startGateway(nats);
t.teardown(async () => {
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

const HOUR = 3_600_000;
const base = Date.now() - 10 * 24 * HOUR;
const alice = { id: "01OPALICE0000000000000000A", name: "alice", type: "operator" };
const bob = { id: "01OPBOB000000000000000000B", name: "bob", type: "operator" };
const web1 = { id: "node-aaaa", name: "web-1", type: "agent" };
const db1 = { id: "node-bbbb", name: "db-1", type: "agent" };
const system = { id: "system", name: "system", type: "system" };
const specs: Record<string, EventSpec> = {
  approved: { type: "agent.approved", actor: alice, target: web1 },
  tagged: { type: "agent.tags.updated", actor: bob, target: web1 },
  connected: { type: "agent.connected", actor: db1, target: db1 },
  applied: { type: "state.apply.succeeded", actor: web1, target: { id: "base", name: "base", type: "module" } },
  lookalike: { type: "agents.bogus", actor: system, target: { id: "node-aaaa", name: "web-1", type: "host" } },
  bare: { type: "agent", actor: system, target: { id: "x", name: "x", type: "thing" } },
  secret: {
    type: "secret.created",
    actor: alice,
    target: { id: "s1", name: "db-password", type: "secret" },
    metadata: { restricted: true, tags: ["a", "b"], n: 3 },
  },
  bobCreated: { type: "operator.created", actor: system, target: bob },
  loginFailed: {
    type: "auth.login.failed",
    actor: system,
    target: { id: "ab12", name: "ab12", type: "public_key" },
    severity: "warning",
  },
  approvedOther: { type: "agent.approved", actor: alice, target: { id: "node-cccc", name: "cache-1", type: "agent" } },
  impostor: {
    type: "operator.created",
    actor: { id: "op-web", name: "web-1", type: "operator" },
    target: { id: "z", name: "z", type: "operator" },
  },
  // About web-1 only through metadata: a terminal session on it, a secret refused for it.
  session: {
    type: "terminal.session.opened",
    actor: alice,
    target: { id: "01SESSION0000000000000000S", name: "web-1", type: "terminal_session" },
    metadata: { node_id: "node-aaaa", node_name: "web-1" },
  },
  denied: {
    type: "secret.denied",
    actor: alice,
    target: { id: "db-password", name: "db-password", type: "secret" },
    metadata: { node_id: "node-aaaa", node_name: "web-1", reason: "secret_not_permitted" },
  },
  otherKey: {
    type: "secret.used",
    actor: alice,
    target: { id: "db-password", name: "db-password", type: "secret" },
    metadata: { operation_id: "node-aaaa", reason: "web-1" },
  },
};
const ev = Object.fromEntries(Object.entries(specs).map(([k, s], i) => [k, event({ ...s, at: base + i * HOUR })]));
const walk = Array.from({ length: 1234 }, (_, i) =>
  event({ type: "walk.step", at: base + 20 * HOUR + i * 1000, metadata: { i } }),
);
// A random population in its own window, to compare the SQL filters with the live-tail predicate.
const randStart = base - 5 * 24 * HOUR;
// Seeded (mulberry32), so a failure reproduces.
let seed = 20250131;
const rand = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
  return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
};
const pickOf = <T>(a: readonly T[]) => a[Math.floor(rand() * a.length)]!;
const refs = [
  { id: "r-op1", name: "r-alice", type: "operator" },
  { id: "r-op2", name: "r-bob", type: "operator" },
  { id: "r-node1", name: "r-web", type: "agent" },
  { id: "r-node2", name: "r-db", type: "agent" },
  system,
  { id: "r-node3", name: "r-alice", type: "agent" },
  { id: "r-web", name: "r-x", type: "operator" },
  { id: "r-m", name: "r-db", type: "module" },
];
const types = [
  "agent",
  "agent.approved",
  "agent.tags.updated",
  "agents.x",
  // Sorts between "agent" and "agent." (the range a category page walks), yet is no agent event.
  "agent-x.y",
  "state.apply.failed",
  "state.plan.completed",
  "state",
  "auth.login.failed",
];
const metadatas: JsonObject[] = [
  {},
  {},
  { node_id: "r-node1", node_name: "r-web" },
  { node_id: "r-node2" },
  { node_name: "r-x" },
];
const random = Array.from({ length: 400 }, (_, i) =>
  event({
    type: pickOf(types),
    at: randStart + i * 60_000,
    actor: pickOf(refs),
    target: pickOf(refs),
    metadata: pickOf(metadatas),
  }),
);
await publish([...Object.values(ev), ...walk, ...random]);
await eventually(
  async () =>
    Number(
      (await audit.deps.pool.query("SELECT count(*) FROM events WHERE event_type = 'walk.step'")).rows[0].count,
    ) === 1234,
  30_000,
);
await eventually(
  async () =>
    (
      await audit.deps.pool.query("SELECT 1 FROM events WHERE id = ANY($1)", [
        [...Object.values(ev), ...random].map((e) => e.id),
      ])
    ).rowCount ===
    Object.keys(ev).length + random.length,
);

const get = (qs: string) => call(gw.url, "GET", `/api/v1/audit${qs}`, { token });
const names = (body: { events: Array<{ id: string }> }) =>
  body.events.map((e) => Object.entries(ev).find(([, v]) => v.id === e.id)?.[0] ?? e.id);
const newestFirst = (...keys: string[]) =>
  keys
    .map((k) => [k, ev[k]!.id] as const)
    .sort((a, b) => (a[1] < b[1] ? 1 : -1))
    .map(([k]) => k);
const iso = (ms: number) => new Date(ms).toISOString();
const window = `after=${iso(base)}&before=${iso(base + 11 * HOUR)}`;

t.test("an event comes back exactly as published, in the documented shape", async (t) => {
  const r = await get(`?event_type=secret.created&${window}`);
  t.equal(r.status, 200);
  t.same(r.body, {
    events: [
      {
        id: ev.secret!.id,
        timestamp: ev.secret!.timestamp,
        event_type: "secret.created",
        severity: "info",
        summary: "test event",
        actor: alice,
        target: { id: "s1", name: "db-password", type: "secret" },
        metadata: { restricted: true, tags: ["a", "b"], n: 3 },
      },
    ],
    has_more: false,
    next_cursor: null,
  });
});

t.test("agent: node id or name, on an actor or target of type agent or in metadata, each event once", async (t) => {
  const expected = newestFirst("denied", "session", "applied", "tagged", "approved");
  t.same(names((await get(`?agent=node-aaaa`)).body), expected, "by node id");
  t.same(
    names((await get(`?agent=web-1`)).body),
    expected,
    "by name; not the host lookalike, not the operator named web-1, not other metadata keys",
  );
  t.same(names((await get(`?agent=db-1`)).body), ["connected"], "actor and target both match: listed once");
  t.same(names((await get(`?agent=nobody`)).body), []);
});

t.test("operator: id or name of the actor", async (t) => {
  t.same(names((await get(`?operator=alice&${window}`)).body), newestFirst("approvedOther", "secret", "approved"));
  t.same(
    names((await get(`?operator=${alice.id}&${window}`)).body),
    newestFirst("approvedOther", "secret", "approved"),
  );
  t.same(names((await get(`?operator=bob&${window}`)).body), ["tagged"], "bob as a target does not count");
});

t.test("event_type is exact; category is a prefix at a dot boundary", async (t) => {
  t.same(names((await get(`?event_type=agent.approved&${window}`)).body), newestFirst("approvedOther", "approved"));
  t.same(names((await get(`?event_type=agent&${window}`)).body), ["bare"]);
  t.same(
    names((await get(`?category=agent&${window}`)).body),
    newestFirst("approvedOther", "bare", "connected", "tagged", "approved"),
    "not agents.bogus",
  );
  t.same(names((await get(`?category=agent.tags&${window}`)).body), ["tagged"]);
  t.same(names((await get(`?category=auth.login&${window}`)).body), ["loginFailed"]);
  t.same(
    names((await get(`?category=auth.login.failed&${window}`)).body),
    ["loginFailed"],
    "a full type is its own category",
  );
  t.same(names((await get(`?category=auth.log&${window}`)).body), [], "no partial segment");
  t.same(names((await get(`?category=agents&${window}`)).body), ["lookalike"]);
});

t.test("after is inclusive, before exclusive (RFC 3339 with offsets too)", async (t) => {
  const at = Date.parse(ev.connected!.timestamp);
  t.same(
    names((await get(`?after=${iso(at)}&before=${iso(at + 1)}`)).body),
    ["connected"],
    "the exact instant is included by after",
  );
  t.same(names((await get(`?after=${iso(at - HOUR)}&before=${iso(at)}`)).body), ["tagged"], "and excluded by before");
  const plus2 = new Date(at + 2 * HOUR).toISOString().replace("Z", "+02:00");
  t.same(
    names((await get(`?after=${encodeURIComponent(plus2)}&before=${iso(at + 1)}`)).body),
    ["connected"],
    "offsets are honoured",
  );
});

t.test("filters combine", async (t) => {
  t.same(names((await get(`?agent=web-1&category=state`)).body), ["applied"]);
  t.same(names((await get(`?agent=web-1&operator=bob`)).body), ["tagged"]);
  t.same(names((await get(`?operator=alice&event_type=secret.created`)).body), ["secret"]);
  t.same(
    names((await get(`?category=agent&after=${iso(base + 2 * HOUR)}&before=${iso(base + 9 * HOUR)}`)).body),
    newestFirst("bare", "connected"),
    "approvedOther at +9h is excluded",
  );
});

t.test("cursor walk over 1,234 events with limit 100: no gaps, no repeats, newest first", async (t) => {
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  for (;;) {
    const r = await get(`?category=walk&limit=100${cursor ? `&cursor=${cursor}` : ""}`);
    t.equal(r.status, 200);
    pages++;
    seen.push(...r.body.events.map((e: { id: string }) => e.id));
    if (!r.body.has_more) {
      t.equal(r.body.next_cursor, null, "next_cursor null at the end");
      break;
    }
    t.equal(r.body.events.length, 100);
    t.equal(r.body.next_cursor, r.body.events.at(-1).id, "next_cursor is the last id of the page");
    cursor = r.body.next_cursor;
  }
  t.equal(pages, 13);
  t.equal(seen.length, 1234);
  t.equal(new Set(seen).size, 1234, "no repeats");
  t.same(seen, walk.map((e) => e.id).reverse(), "every event, newest first");
});

t.test("limit defaults to 50 and pages exactly at the end", async (t) => {
  const r = await get(`?category=walk`);
  t.equal(r.body.events.length, 50);
  t.equal(r.body.has_more, true);
  const last = await get(`?category=walk&limit=34&cursor=${walk[34]!.id}`);
  t.equal(last.body.events.length, 34);
  t.equal(last.body.has_more, false, "exactly the rest: no empty extra page");
  t.equal(last.body.next_cursor, null);
  t.equal((await get(`?category=walk&limit=500`)).body.events.length, 500);
});

t.test("every invalid parameter is a 400 problem naming it", async (t) => {
  const cases: Array<[string, string, string]> = [
    ["?limit=0", "invalid_limit", "limit"],
    ["?limit=501", "invalid_limit", "limit"],
    ["?limit=abc", "invalid_limit", "limit"],
    ["?limit=1.5", "invalid_limit", "limit"],
    ["?limit=-1", "invalid_limit", "limit"],
    ["?limit=", "invalid_limit", "limit"],
    ["?limit=5&limit=6", "invalid_limit", "limit"],
    ["?cursor=not-a-ulid", "invalid_cursor", "cursor"],
    ["?cursor=8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "invalid_cursor", "cursor"],
    ["?cursor=01ARZ3NDEKTSV4RRFFQ69G5FA", "invalid_cursor", "cursor"],
    ["?after=yesterday", "invalid_timestamp", "after"],
    ["?after=2025-13-45T00:00:00Z", "invalid_timestamp", "after"],
    ["?before=1700000000000", "invalid_timestamp", "before"],
    ["?before=2025-01-01", "invalid_timestamp", "before"],
    ["?category=agent.", "invalid_filter", "category"],
    ["?category=agent..tags", "invalid_filter", "category"],
    ["?category=agent*", "invalid_filter", "category"],
    ["?event_type=agent%20approved", "invalid_filter", "event_type"],
    ["?agent=", "invalid_filter", "agent"],
    ["?agent=a%01b", "invalid_filter", "agent"],
    [`?operator=${"x".repeat(300)}`, "invalid_filter", "operator"],
    ["?agent=a&agent=b", "invalid_filter", "agent"],
    ["?evnet_type=agent.approved", "invalid_filter", "evnet_type"],
  ];
  for (const [qs, code, parameter] of cases) {
    const r = await get(qs);
    t.equal(r.status, 400, `${qs} → 400`);
    t.match(r.type, /application\/problem\+json/);
    t.equal(r.body?.code, code, `${qs} → ${code}`);
    t.equal(r.body?.parameter, parameter, `${qs} names ${parameter}`);
    t.match(r.body?.detail, new RegExp(parameter.replace(/[-]/g, "\\-")), "the message names it too");
  }
});

t.test("the SQL filters and the live-tail predicate select the same events", async (t) => {
  const keys = ["agent", "operator", "event_type", "category", "after", "before"] as const;
  const values = {
    agent: ["r-web", "r-node1", "r-alice", "r-db", "r-x", "r-node2"],
    operator: ["r-alice", "r-op2", "r-web", "system"],
    event_type: types,
    category: ["agent", "agent.tags", "state", "state.apply", "auth.login.failed", "agents", "agent-x"],
    after: [0, 100, 250].map((m) => iso(randStart + m * 60_000)),
    before: [50, 200, 400].map((m) => iso(randStart + m * 60_000)),
  };
  for (let round = 0; round < 60; round++) {
    const chosen = keys.filter(() => rand() < 0.4);
    const q: Record<string, string> = Object.fromEntries(chosen.map((k) => [k, pickOf(values[k])]));
    const f: FilterValues = {
      agent: q.agent,
      operator: q.operator,
      eventType: q.event_type,
      category: q.category,
      after: q.after ? Date.parse(q.after) : undefined,
      before: q.before ? Date.parse(q.before) : undefined,
    };
    const expected = random
      .filter((e) =>
        matchesFilter({ ...f, after: f.after ?? randStart, before: f.before ?? randStart + 400 * 60_000 }, e),
      )
      .map((e) => e.id)
      .reverse();
    const qs = new URLSearchParams({
      after: iso(randStart),
      before: iso(randStart + 400 * 60_000),
      ...q,
      limit: "500",
    });
    if (q.after && q.before && Date.parse(q.after) >= Date.parse(q.before)) continue;
    const r = await get(`?${qs}`);
    t.equal(r.status, 200);
    // A chosen after/before replaces the population's window, in the URL and in the predicate.
    t.same(
      r.body.events.map((e: { id: string }) => e.id),
      expected,
      JSON.stringify(q),
    );
  }
});

t.test("a category walked in small pages: every event of its types once, newest first", async (t) => {
  for (const category of ["agent", "state", "agent-x"]) {
    const expected = random
      .filter((e) => matchesFilter({ category, after: randStart, before: randStart + 400 * 60_000 }, e))
      .map((e) => e.id)
      .reverse();
    const seen: string[] = [];
    let cursor: string | null = null;
    for (;;) {
      const qs = new URLSearchParams({
        category,
        after: iso(randStart),
        before: iso(randStart + 400 * 60_000),
        limit: "7",
        ...(cursor ? { cursor } : {}),
      });
      const r = await get(`?${qs}`);
      t.equal(r.status, 200);
      seen.push(...r.body.events.map((e: { id: string }) => e.id));
      if (!r.body.has_more) break;
      cursor = r.body.next_cursor;
    }
    t.ok(expected.length > 7, `${category}: more than one page`);
    t.same(seen, expected, category);
  }
});

t.test("anonymous callers get 401", async (t) => {
  const r = await call(gw.url, "GET", "/api/v1/audit");
  t.equal(r.status, 401);
});

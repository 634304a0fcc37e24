import t from "tap";
import pg from "pg";
import { createTestDatabase, eventually, startNats, startSystem } from "@orch/kit/testing";
import { eventFactory, publisher } from "../../services/audit/test/harness.js";

// The audit service as a real process behind the real gateway: 10,000 events published while
// the process is SIGKILLed mid-ingest (between insert and ack for whatever batch it held) and
// restarted; every event is stored exactly once and readable through GET /audit.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "audit", "gateway"],
  env: { ORCH_AUDIT_ACK_WAIT_MS: "2000", ORCH_AUDIT_BATCH_SIZE: "200" },
});
const reader = new pg.Pool({ connectionString: db.url, max: 2, options: "-c search_path=audit" });
reader.on("connect", (c) => c.on("error", () => {}));
t.teardown(async () => {
  await reader.end();
});
const token = await system.login(system.admin);
const nc = await nats.connect("e2e-publisher");
const publish = await publisher(nc);
const event = eventFactory();
const loaded = async () =>
  Number((await reader.query("SELECT count(*) FROM events WHERE event_type = 'e2e.load'")).rows[0].count);

t.test("10,000 events across a SIGKILL and a restart of the audit process: all stored, none twice", async (t) => {
  const all = Array.from({ length: 10_000 }, (_, i) => event({ type: "e2e.load", metadata: { i } }));
  // Kill it while events are still arriving and being stored: frozen (SIGSTOP) once it has stored
  // some, so whatever batch it holds stays between insert and ack, and the events published after
  // the freeze are certainly still unstored when the SIGKILL comes, at any machine speed.
  const publishing = publish(all.slice(0, 3000));
  await eventually(async () => (await loaded()) >= 1500, 30_000, 10);
  system.procs.get("audit")!.child.kill("SIGSTOP");
  await publishing;
  await publish(all.slice(3000, 6000));
  await system.kill("audit", "SIGKILL");
  const atKill = await loaded();
  t.ok(atKill >= 1500 && atKill < 6000, `killed mid-run (${atKill} of the 6,000 published so far were stored)`);
  await publish(all.slice(6000));
  await system.start("audit");
  await eventually(async () => (await loaded()) === 10_000, 60_000, 250);

  const distinct = await reader.query<{ n: number }>(
    "SELECT count(DISTINCT id)::int AS n FROM events WHERE id = ANY($1)",
    [all.map((e) => e.id)],
  );
  t.equal(distinct.rows[0]!.n, 10_000, "every published event is stored");
  t.equal(await loaded(), 10_000, "none twice");

  // And the API returns each exactly once, newest first, across pages.
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const r = await system.api("GET", `/api/v1/audit?category=e2e&limit=500${cursor ? `&cursor=${cursor}` : ""}`, {
      token,
    });
    t.equal(r.status, 200);
    seen.push(...r.body.events.map((e: { id: string }) => e.id));
    cursor = r.body.next_cursor;
  } while (cursor);
  t.equal(seen.length, 10_000);
  t.same(seen, all.map((e) => e.id).reverse());
  t.notMatch(system.output(), /"level":(50|60)/, "no error logged by any service");
});

t.test("the service's own events go through the bus like every other", async (t) => {
  const r = await system.api("PUT", "/api/v1/audit/retention", { token, body: { retention_days: 90 } });
  t.equal(r.status, 200);
  t.same(r.body, { retention_days: 90, source: "override", default_retention_days: null });
  const logins = await system.api("GET", "/api/v1/audit?event_type=auth.login.succeeded", { token });
  t.ok(logins.body.events.length >= 1, "the admin's login (published by auth) is stored");
  t.equal(logins.body.events[0].actor.name, "admin");
  const updated = await system.api("GET", "/api/v1/audit?category=audit.retention", { token });
  t.equal(updated.body.events.length, 1);
});

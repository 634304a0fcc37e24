import t, { type Test } from "tap";
import { OrchError } from "@orch/kit";
import { createTestDatabase, eventually, startNats } from "@orch/kit/testing";
import { agentsClient, collectEvents, memIdentity, startAgentsService, testLink } from "./harness.js";

// AgentsService over NATS: approval, removal, tags, listing, and the 400/404/409 answers that change nothing.
const nats = await startNats();
const db = await createTestDatabase();
const svc = await startAgentsService(nats, db);
const nc = await nats.connect("caller");
const ev = collectEvents(nc);
const { c, as } = agentsClient(nc);
t.teardown(async () => {
  await svc.stop();
  await db.drop();
  await nats.stop();
});

/** Registers an agent through a real handshake and leaves it connected (pending). */
async function register(hostname = "h") {
  const id = memIdentity();
  const link = testLink(svc.server, id, { attributes: { hostname } });
  await link.up();
  return { id: id.nodeId, link };
}

async function refused(t: Test, p: Promise<unknown>, code: string, reason: string, field?: string) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof OrchError, `rejected with an OrchError (${reason})`);
  const e = err as OrchError;
  t.equal(e.code, code, `code ${code}`);
  t.equal(e.reason, reason, `reason ${reason}`);
  if (field) t.equal(e.details.field, field, `names the field ${field}`);
}

/** Every committed event has been published and has reached our subscription. */
async function settled() {
  await eventually(async () => Number((await svc.deps.pool.query("SELECT count(*) FROM outbox")).rows[0].count) === 0);
  await nc.flush();
}

const snapshot = async () =>
  (await svc.deps.pool.query("SELECT node_id, name, status, tags FROM agents ORDER BY node_id")).rows;

t.test("approval: names are required, valid, unique and immutable", async (t) => {
  const a = await register("a");
  const b = await register("b");
  const before = await snapshot();
  const eventsBefore = ev.events.length;

  await refused(
    t,
    c.setApproval({ nodeId: a.id, status: "approved", name: "" }, as),
    "INVALID_ARGUMENT",
    "name_required",
    "name",
  );
  await refused(
    t,
    c.setApproval({ nodeId: a.id, status: "approved", name: "Web_1" }, as),
    "INVALID_ARGUMENT",
    "invalid_name",
    "name",
  );
  await refused(
    t,
    c.setApproval({ nodeId: a.id, status: "approved", name: "-web" }, as),
    "INVALID_ARGUMENT",
    "invalid_name",
    "name",
  );
  await refused(
    t,
    c.setApproval({ nodeId: a.id, status: "approved", name: "a".repeat(64) }, as),
    "INVALID_ARGUMENT",
    "invalid_name",
    "name",
  );
  await refused(
    t,
    c.setApproval({ nodeId: a.id, status: "maybe", name: "web" }, as),
    "INVALID_ARGUMENT",
    "invalid_status",
    "status",
  );
  await refused(
    t,
    c.setApproval({ nodeId: a.id, status: "approved", name: b.id }, as),
    "INVALID_ARGUMENT",
    "invalid_name",
    "name",
  );
  await refused(
    t,
    c.setApproval({ nodeId: "0".repeat(32), status: "approved", name: "web" }, as),
    "NOT_FOUND",
    "agent_not_found",
  );
  await refused(t, c.setApproval({ nodeId: "0".repeat(32), status: "rejected" }, as), "NOT_FOUND", "agent_not_found");
  t.same(await snapshot(), before, "refused requests change nothing");

  const approved = await c.setApproval({ nodeId: a.id, status: "approved", name: "web-1" }, as);
  t.match(approved, { nodeId: a.id, name: "web-1", status: "approved", connected: true });
  const ap = await ev.wait("agent.approved", a.id);
  t.equal(ap.actor?.id, as.actor.id, "the event names the operator");
  t.equal(ap.target?.name, "web-1");

  t.same(
    await c.setApproval({ nodeId: a.id, status: "approved", name: "web-1" }, as).then((x) => x.name),
    "web-1",
    "approving again with the same name is a no-op",
  );
  await refused(
    t,
    c.setApproval({ nodeId: a.id, status: "approved", name: "web-2" }, as),
    "FAILED_PRECONDITION",
    "name_immutable",
    "name",
  );
  await refused(
    t,
    c.setApproval({ nodeId: b.id, status: "approved", name: "web-1" }, as),
    "ALREADY_EXISTS",
    "name_taken",
    "name",
  );
  t.equal((await c.getAgent({ id: b.id }, as)).status, "pending", "the loser stays pending");
  await settled();
  t.equal(ev.of("agent.approved").length, 1, "only the real change emitted an event");
  t.ok(ev.events.length > eventsBefore);

  t.equal((await c.getAgent({ id: "web-1" }, as)).nodeId, a.id, "GetAgent accepts the name");

  // Reject ignores the name; the name stays bound to the agent.
  const rej = await c.setApproval({ nodeId: a.id, status: "rejected", name: "ignored" }, as);
  t.match(rej, { status: "rejected", name: "web-1", connected: false });
  await ev.wait("agent.rejected", a.id);
  await refused(
    t,
    c.setApproval({ nodeId: a.id, status: "approved", name: "other" }, as),
    "FAILED_PRECONDITION",
    "name_immutable",
    "name",
  );
  a.link.close();
  b.link.close();
});

t.test("removal: only rejected agents, and the record is gone", async (t) => {
  const a = await register("rm");
  await refused(t, c.removeAgent({ id: a.id }, as), "FAILED_PRECONDITION", "agent_not_rejected");
  await refused(t, c.removeAgent({ id: "f".repeat(32) }, as), "NOT_FOUND", "agent_not_found");
  await c.setApproval({ nodeId: a.id, status: "rejected" }, as);
  await c.removeAgent({ id: a.id }, as);
  await refused(t, c.getAgent({ id: a.id }, as), "NOT_FOUND", "agent_not_found");
  const removed = await ev.wait("agent.removed", a.id);
  t.equal(removed.actor?.name, "admin");
});

t.test("tags: validation, set, replace, delete, and the distinct list", async (t) => {
  const a = await register("tagged-a");
  const b = await register("tagged-b");
  const before = await snapshot();
  await refused(
    t,
    c.setTag({ nodeId: a.id, key: "Env", value: "x" }, as),
    "INVALID_ARGUMENT",
    "invalid_tag_key",
    "key",
  );
  await refused(t, c.setTag({ nodeId: a.id, key: "", value: "x" }, as), "INVALID_ARGUMENT", "invalid_tag_key", "key");
  await refused(
    t,
    c.setTag({ nodeId: a.id, key: `a${"b".repeat(63)}`, value: "x" }, as),
    "INVALID_ARGUMENT",
    "invalid_tag_key",
    "key",
  );
  await refused(
    t,
    c.setTag({ nodeId: a.id, key: "env", value: "x".repeat(256) }, as),
    "INVALID_ARGUMENT",
    "invalid_tag_value",
    "value",
  );
  await refused(
    t,
    c.setTag({ nodeId: a.id, key: "env", value: "bad\nvalue" }, as),
    "INVALID_ARGUMENT",
    "invalid_tag_value",
    "value",
  );
  await refused(
    t,
    c.replaceTags({ nodeId: a.id, tags: { ok: "1", "NOT OK": "2" } }, as),
    "INVALID_ARGUMENT",
    "invalid_tag_key",
    "tags.NOT OK",
  );
  await refused(t, c.setTag({ nodeId: "e".repeat(32), key: "env", value: "x" }, as), "NOT_FOUND", "agent_not_found");
  t.same(await snapshot(), before, "nothing changed");

  t.same(
    (await c.setTag({ nodeId: a.id, key: "env", value: "x".repeat(255) }, as)).tags,
    { env: "x".repeat(255) },
    "255 characters is the limit",
  );
  t.same((await c.setTag({ nodeId: a.id, key: "env", value: "prod" }, as)).tags, { env: "prod" });
  t.same((await c.setTag({ nodeId: a.id, key: "team.io/owner", value: "ops ünïcode" }, as)).tags, {
    env: "prod",
    "team.io/owner": "ops ünïcode",
  });
  const upd = await eventually(() =>
    ev.of("agent.tags.updated", a.id).find((e) => "team.io/owner" in ((e.metadata?.new as object) ?? {})),
  );
  t.same(
    upd.metadata,
    { old: { env: "prod" }, new: { env: "prod", "team.io/owner": "ops ünïcode" } },
    "the event carries old and new tags",
  );

  t.same((await c.replaceTags({ nodeId: a.id, tags: { env: "staging", rack: "r1" } }, as)).tags, {
    env: "staging",
    rack: "r1",
  });
  await c.replaceTags({ nodeId: b.id, tags: { env: "prod", rack: "r1" } }, as);
  await settled();
  const n = ev.of("agent.tags.updated").length;
  await c.replaceTags({ nodeId: b.id, tags: { env: "prod", rack: "r1" } }, as);
  await settled();
  t.equal(ev.of("agent.tags.updated").length, n, "an identical replace emits nothing");

  t.same(
    (await c.listTags({}, as)).tags.map((x) => ({ key: x.key, values: x.values })),
    [
      { key: "env", values: ["prod", "staging"] },
      { key: "rack", values: ["r1"] },
    ],
  );

  t.same((await c.deleteTag({ nodeId: a.id, key: "rack" }, as)).tags, { env: "staging" });
  await refused(t, c.deleteTag({ nodeId: a.id, key: "rack" }, as), "NOT_FOUND", "tag_not_found", "key");
  await refused(t, c.deleteTag({ nodeId: a.id, key: "BAD" }, as), "INVALID_ARGUMENT", "invalid_tag_key", "key");
  t.same((await c.replaceTags({ nodeId: a.id, tags: {} }, as)).tags, {}, "replace with nothing clears");
  a.link.close();
  b.link.close();
});

t.test("list: keyset pages by node id, status filter, validation", async (t) => {
  const all: string[] = [];
  let cursor = "";
  for (let i = 0; i < 20; i++) {
    const page = await c.listAgents({ limit: 2, cursor }, as);
    all.push(...page.agents.map((a) => a.nodeId));
    t.ok(page.agents.length <= 2);
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  const expected = (await svc.deps.pool.query("SELECT node_id FROM agents ORDER BY node_id")).rows.map(
    (r) => r.node_id,
  );
  t.same(all, expected, "pages cover every agent once, in order");
  t.ok(expected.length >= 4);

  const pending = await c.listAgents({ status: "pending" }, as);
  t.ok(pending.agents.every((a) => a.status === "pending"));
  t.ok(pending.agents.length >= 1);
  await refused(t, c.listAgents({ status: "gone" }, as), "INVALID_ARGUMENT", "invalid_status", "status");
  await refused(t, c.listAgents({ limit: 501 }, as), "INVALID_ARGUMENT", "invalid_limit");
  await refused(
    t,
    c.listAgents({ cursor: "x; DROP TABLE agents" }, as),
    "INVALID_ARGUMENT",
    "invalid_cursor",
    "cursor",
  );
});

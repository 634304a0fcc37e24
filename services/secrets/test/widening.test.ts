// Restriction widening (docs/secrets.md#who-may-widen-a-secret): the "B admits no agent A does not" rule as a pure function,
// checked exhaustively against the resolution rule itself, then through the real service on NATS
// and Postgres with an operator and an admin.
import t from "tap";
import pg from "pg";
import { createTestDatabase, startNats } from "@orch/kit/testing";
import { atMostAsPermissive, decide, type Restriction } from "../src/restriction.js";
import {
  ADMIN,
  OPERATOR,
  auditLog,
  newKey,
  rejection,
  secretsClient,
  noApprovalPolicies,
  startSecrets,
} from "./harness.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const X = "f".repeat(32); // listed by no restriction below: stands for every other agent

t.test("rule: examples", async (t) => {
  const r = (node_ids: string[], tags: Record<string, string> = {}): Restriction => ({ node_ids, tags });
  t.equal(atMostAsPermissive(null, null), true, "any → any");
  t.equal(atMostAsPermissive(r([A]), null), true, "narrowing from any");
  t.equal(atMostAsPermissive(null, r([A])), false, "clearing a restriction widens");
  t.equal(atMostAsPermissive(r([A]), r([A, B])), true, "fewer node ids");
  t.equal(atMostAsPermissive(r([A, B]), r([A])), false, "one more node id");
  const prodDb = r([], { env: "prod", role: "db" });
  t.equal(atMostAsPermissive(prodDb, r([], { env: "prod" })), true, "more required tags narrow");
  t.equal(atMostAsPermissive(r([], { env: "prod" }), prodDb), false, "fewer required tags widen");
  t.equal(atMostAsPermissive(r([], { env: "dev" }), r([], { env: "prod" })), false, "another tag value");
  t.equal(atMostAsPermissive(r([], { env: "prod" }), r([A])), false, "tags where only node ids were allowed");
  // a listed node may lack the tag
  t.equal(atMostAsPermissive(r([A]), r([], { env: "prod" })), false, "a node id is not covered by a tag rule");
  t.equal(atMostAsPermissive(r([A], { env: "prod" }), r([A], { env: "prod" })), true, "unchanged");
  t.equal(atMostAsPermissive(r([A]), r([A], { env: "prod" })), true, "dropping the tag rule");
  t.equal(atMostAsPermissive(r([], { constructor: "x" }), r([], { env: "prod" })), false, "no prototype keys");
});

// Every restriction over node ids {A, B} and tags env∈{prod,dev}, role∈{db}: compare the rule with
// "every agent `next` admits, `prev` admits", checked by `decide` over every agent that matters.
t.test("rule: agrees with the resolution rule on every pair of small restrictions", async (t) => {
  const idSets = [[], [A], [B], [A, B]];
  const tagSets: Record<string, string>[] = [
    {},
    { env: "prod" },
    { env: "dev" },
    { role: "db" },
    { env: "prod", role: "db" },
    { env: "dev", role: "db" },
  ];
  const restrictions: Array<Restriction | null> = [null];
  for (const node_ids of idSets) {
    for (const tags of tagSets) if (node_ids.length || Object.keys(tags).length) restrictions.push({ node_ids, tags });
  }
  const agents = [];
  for (const nodeId of [A, B, X]) for (const tags of tagSets) agents.push({ nodeId, status: "approved", tags });
  let pairs = 0;
  let narrowing = 0;
  for (const next of restrictions) {
    for (const prev of restrictions) {
      const semantic = agents.every((a) => !decide(next, a).ok || decide(prev, a).ok);
      const rule = atMostAsPermissive(next, prev);
      const pair = `next=${JSON.stringify(next)} prev=${JSON.stringify(prev)}`;
      if (rule !== semantic) t.fail(`${pair}: rule ${rule}, semantics ${semantic}`);
      pairs++;
      if (rule) narrowing++;
    }
  }
  t.equal(pairs, restrictions.length ** 2);
  t.ok(narrowing > restrictions.length && narrowing < pairs, `both answers occur (${narrowing} of ${pairs} narrow)`);
});

const nats = await startNats();
const approvals = await noApprovalPolicies(nats);
const db = await createTestDatabase();
const svc = await startSecrets(nats, db, newKey("a"));
const nc = await nats.connect("test");
const client = secretsClient(nc);
const audit = auditLog(nc);
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(async () => {
  audit.stop();
  await sql.end();
  await svc.stop();
  await db.drop();
  await approvals.stop();
  await nats.stop();
});

const as = (actor = ADMIN) => ({ actor });
const COLS = "restriction, expires_at, updated_by, key_id, nonce";
const stored = async (name: string) =>
  (await sql.query(`SELECT ${COLS} FROM secrets.secrets WHERE name = $1`, [name])).rows[0];

t.test("service: an operator cannot widen or remove a restriction; nothing changes", async (t) => {
  const restriction = { nodeIds: [A], tags: { env: "prod" } };
  await client.createSecret({ name: "db.root", value: "s3cret-root", restriction }, as(ADMIN));
  const before = await stored("db.root");
  const widen: Parameters<typeof client.updateSecret>[0][] = [
    { clearRestriction: true },
    { restriction: { nodeIds: [A, B], tags: { env: "prod" } } },
    { restriction: { nodeIds: [A], tags: { env: "dev" } } },
    { restriction: { nodeIds: [B], tags: {} } },
    // a new value travels with the widening: refused whole, the value is not rotated either
    { value: "other", restriction: { nodeIds: [A], tags: { team: "x" } } },
  ];
  for (const w of widen) {
    const err = await rejection(client.updateSecret({ name: "db.root", ...w }, as(OPERATOR)));
    t.equal(err.code, "PERMISSION_DENIED", JSON.stringify(w));
    t.equal(err.reason, "restriction_widening_requires_admin");
  }
  t.same(await stored("db.root"), before, "row unchanged");
  const updated = audit.events.some((e) => e.eventType === "secret.updated" && e.target?.name === "db.root");
  t.notOk(updated, "no update event");
});

t.test("service: an operator can narrow; an admin can widen and clear", async (t) => {
  const restriction = { nodeIds: [A, B], tags: { env: "prod" } };
  await client.createSecret({ name: "api.key", value: "k-123456", restriction }, as(ADMIN));
  const narrower = { nodeIds: [A], tags: { env: "prod", role: "db" } };
  const n1 = await client.updateSecret({ name: "api.key", restriction: narrower }, as(OPERATOR));
  t.same(n1.restriction?.nodeIds, [A]);
  t.same(n1.restriction?.tags, { env: "prod", role: "db" });
  const idsOnly = { nodeIds: [A], tags: {} };
  const n2 = await client.updateSecret({ name: "api.key", restriction: idsOnly, value: "k-rotated" }, as(OPERATOR));
  t.same(n2.restriction?.tags, {}, "dropping the tag rule narrows");
  t.equal((await stored("api.key")).updated_by, OPERATOR.id);
  const w = await client.updateSecret({ name: "api.key", restriction: { nodeIds: [A, B], tags: {} } }, as(ADMIN));
  t.same(w.restriction?.nodeIds, [A, B], "admin widens");
  const c = await client.updateSecret({ name: "api.key", clearRestriction: true }, as(ADMIN));
  t.equal(c.restriction, undefined, "admin clears");
  const r = await client.updateSecret({ name: "api.key", restriction: { nodeIds: [B], tags: {} } }, as(OPERATOR));
  t.same(r.restriction?.nodeIds, [B], "an operator may restrict an unrestricted secret");
});

t.test("service: an operator may bring an expiry forward, not move it later or remove it", async (t) => {
  const now = Date.now();
  await client.createSecret({ name: "temp", value: "t-123456", expiresAt: now + 3_600_000 }, as(ADMIN));
  for (const expiresAt of [0, now + 7_200_000]) {
    const err = await rejection(client.updateSecret({ name: "temp", expiresAt }, as(OPERATOR)));
    t.equal(err.code, "PERMISSION_DENIED");
    t.equal(err.reason, "expiry_extension_requires_admin");
  }
  t.equal(Number((await stored("temp")).expires_at), now + 3_600_000, "unchanged");
  const earlier = await client.updateSecret({ name: "temp", expiresAt: now + 1_800_000 }, as(OPERATOR));
  t.equal(earlier.expiresAt, now + 1_800_000);
  await client.createSecret({ name: "forever", value: "f-123456" }, as(ADMIN));
  const set = await client.updateSecret({ name: "forever", expiresAt: now + 600_000 }, as(OPERATOR));
  t.equal(set.expiresAt, now + 600_000, "adding an expiry narrows");
  const ext = await client.updateSecret({ name: "temp", expiresAt: 0 }, as(ADMIN));
  t.equal(ext.expiresAt, 0, "admin removes the expiry");
});

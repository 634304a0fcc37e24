// orch.secrets.Resolve against the real agents service: only approved agents the restriction
// allows, never an expired secret; every use and every refusal is an event without the value.
import { randomBytes } from "node:crypto";
import t, { type Test } from "tap";
import pg from "pg";
import { createTestDatabase, startNats } from "@orch/kit/testing";
import { manualClock } from "../../gateway/test/harness.js";
import {
  ADMIN,
  auditLog,
  newKey,
  rejection,
  secretsClient,
  startAgents,
  noApprovalPolicies,
  startSecrets,
} from "./harness.js";

const nats = await startNats();
const approvals = await noApprovalPolicies(nats);
const db = await createTestDatabase();
const clock = manualClock();
const keyA = newKey("a");
const agents = await startAgents(nats, db);
let svc = await startSecrets(nats, db, keyA, { clock });
// Each call under the bus user that makes it: Resolve as the state service (its only caller),
// managing secrets as the gateway; the events through a probe (neither may read audit.>).
const resolver = secretsClient(await nats.connect("state"));
const secrets = secretsClient(await nats.connect("gateway"));
const audit = auditLog(await nats.connect("audit-observer"));
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(async () => {
  audit.stop();
  await sql.end();
  await svc.stop();
  await agents.stop();
  await db.drop();
  await approvals.stop();
  await nats.stop();
});

// The state service calls Resolve with the operator who started the operation.
const call = { actor: ADMIN };
const value = () => `v-${randomBytes(12).toString("hex")}`;
const approvedA = await agents.add({ status: "approved", name: "web-1" });
const approvedB = await agents.add({ status: "approved", name: "db-1", tags: { env: "prod", role: "db" } });
const pendingC = await agents.add({ tags: { env: "prod", role: "db" } });
const rejectedD = await agents.add({ status: "rejected" });
const nameOf: Record<string, string> = { [approvedA]: "web-1", [approvedB]: "db-1" };

async function refused(t: Test, name: string, nodeId: string, code: string, reason: string) {
  const op = `op-${randomBytes(4).toString("hex")}`;
  const e = await rejection(resolver.resolve({ name, nodeId, operationId: op }, call));
  t.equal(e.code, code, `${reason}: code`);
  t.equal(e.reason, reason);
  const ev = await audit.waitFor("secret.denied", (ev) => ev.metadata?.operation_id === op);
  t.equal(ev.metadata?.reason, reason, "secret.denied records the reason");
  t.equal(ev.target?.name, name);
  t.equal(ev.severity, "warning");
  // A named agent is named by its name in the summary and the problem; its node id stays in metadata.
  const agentName = nameOf[nodeId];
  if (agentName) {
    t.match(ev.metadata, { node_id: nodeId, node_name: agentName }, "metadata names the agent both ways");
    t.ok(ev.summary.includes(`agent ${agentName}`), `summary names the agent: ${ev.summary}`);
    t.notOk(ev.summary.includes(nodeId), "no node id in the summary");
    t.notOk(e.message.includes(nodeId), `no node id in the problem: ${e.message}`);
  }
  return ev;
}

async function resolves(t: Test, name: string, nodeRef: string, expected: string, nodeId = nodeRef) {
  const op = `op-${randomBytes(4).toString("hex")}`;
  const r = await resolver.resolve({ name, nodeId: nodeRef, operationId: op }, call);
  t.equal(r.value, expected, `${name} resolves for ${nodeRef}`);
  const ev = await audit.waitFor("secret.used", (ev) => ev.metadata?.operation_id === op);
  t.same(
    ev.metadata,
    { node_id: nodeId, node_name: nameOf[nodeId], operation_id: op },
    "secret.used names secret, node and operation",
  );
  t.notOk(ev.summary.includes(nodeId), "the summary names the agent by its name");
  t.equal(ev.target?.name, name);
  t.equal(ev.actor?.id, ADMIN.id);
  t.notOk(JSON.stringify(ev).includes(expected), "no value in the event");
}

t.test("no restriction: any approved agent; pending and rejected agents are refused", async (t) => {
  const v = value();
  await secrets.createSecret({ name: "open", value: v }, call);
  await resolves(t, "open", approvedA, v);
  await resolves(t, "open", approvedB, v);
  await resolves(t, "open", "web-1", v, approvedA);
  await refused(t, "open", pendingC, "FAILED_PRECONDITION", "agent_not_approved");
  await refused(t, "open", rejectedD, "FAILED_PRECONDITION", "agent_not_approved");
});

t.test("node restriction: the listed node resolves, another node is not permitted", async (t) => {
  const v = value();
  await secrets.createSecret({ name: "by-node", value: v, restriction: { nodeIds: [approvedA], tags: {} } }, call);
  await resolves(t, "by-node", approvedA, v);
  await refused(t, "by-node", approvedB, "PERMISSION_DENIED", "secret_not_permitted");
});

t.test("tag restriction: agents carrying every tag resolve; approval still required", async (t) => {
  const v = value();
  await secrets.createSecret(
    { name: "by-tag", value: v, restriction: { nodeIds: [], tags: { env: "prod", role: "db" } } },
    call,
  );
  await resolves(t, "by-tag", approvedB, v);
  await refused(t, "by-tag", approvedA, "PERMISSION_DENIED", "secret_not_permitted");
  await refused(t, "by-tag", pendingC, "FAILED_PRECONDITION", "agent_not_approved");
  // Tags change on the agent: the decision follows the registry, not a cached copy.
  await agents.client.replaceTags({ nodeId: approvedB, tags: { env: "prod" } }, call);
  await refused(t, "by-tag", approvedB, "PERMISSION_DENIED", "secret_not_permitted");
  await agents.client.replaceTags({ nodeId: approvedA, tags: { env: "prod", role: "db" } }, call);
  await resolves(t, "by-tag", approvedA, v);
});

t.test("expired secrets are never resolved", async (t) => {
  const v = value();
  await secrets.createSecret({ name: "short-lived", value: v, expiresAt: clock.now() + 60_000 }, call);
  await resolves(t, "short-lived", approvedA, v);
  clock.advance(60_001);
  await refused(t, "short-lived", approvedA, "FAILED_PRECONDITION", "secret_expired");
  await secrets.updateSecret({ name: "short-lived", expiresAt: clock.now() + 60_000 }, call);
  await resolves(t, "short-lived", approvedA, v);
});

t.test("unknown secret or agent", async (t) => {
  await refused(t, "no-such-secret", approvedA, "NOT_FOUND", "secret_not_found");
  await refused(t, "open", "f".repeat(32), "NOT_FOUND", "agent_not_found");
  const e = await rejection(resolver.resolve({ name: "open", nodeId: "", operationId: "x" }, call));
  t.equal(e.reason, "invalid_node_id");
  t.equal(
    (await rejection(resolver.resolve({ name: "bad name", nodeId: approvedA, operationId: "x" }, call))).reason,
    "invalid_name",
  );
});

t.test("rotation: old secrets read under a new active key; after re-encryption the old key can go", async (t) => {
  const v = value();
  await secrets.createSecret({ name: "rotated", value: v }, call);
  const keyB = newKey("b");
  await svc.stop();
  svc = await startSecrets(nats, db, `${keyB},${keyA}`, { clock });
  await resolves(t, "rotated", approvedA, v);
  const v2 = value();
  await secrets.createSecret({ name: "after-rotation", value: v2 }, call);
  t.equal(
    (await sql.query("SELECT key_id FROM secrets.secrets WHERE name = 'after-rotation'")).rows[0].key_id,
    "b",
    "new writes use the new key",
  );
  const r = await secrets.reencrypt({}, call);
  t.equal(r.activeKey, "b");
  t.ok(r.reencrypted >= 1);
  t.same(r.failed, []);
  await svc.stop();
  svc = await startSecrets(nats, db, keyB, { clock });
  await resolves(t, "rotated", approvedA, v);
  await resolves(t, "after-rotation", approvedA, v2);
});

t.test("tampered or relocated ciphertext does not resolve", async (t) => {
  await secrets.createSecret({ name: "victim", value: value() }, call);
  await secrets.createSecret({ name: "donor", value: value() }, call);
  await sql.query(
    "UPDATE secrets.secrets t SET nonce = f.nonce, ciphertext = f.ciphertext, auth_tag = f.auth_tag FROM secrets.secrets f WHERE f.name = 'donor' AND t.name = 'victim'",
  );
  const moved = await rejection(resolver.resolve({ name: "victim", nodeId: approvedA, operationId: "x" }, call));
  t.equal(moved.reason, "secret_undecryptable");
  await sql.query(
    "UPDATE secrets.secrets SET auth_tag = set_byte(auth_tag, 3, get_byte(auth_tag, 3) # 128) WHERE name = 'donor'",
  );
  const flipped = await rejection(resolver.resolve({ name: "donor", nodeId: approvedA, operationId: "x" }, call));
  t.equal(flipped.reason, "secret_undecryptable");
});

t.test("without the agents service, nothing resolves and nothing is recorded as used", async (t) => {
  await agents.stop();
  const before = audit.events.filter((e) => e.eventType === "secret.used").length;
  const e = await rejection(resolver.resolve({ name: "open", nodeId: approvedA, operationId: "down" }, call));
  t.equal(e.code, "UNAVAILABLE");
  await new Promise((r) => setTimeout(r, 300));
  t.equal(audit.events.filter((e) => e.eventType === "secret.used").length, before);
});

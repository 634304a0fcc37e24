// Held secret writes (pending_writes) under key rotation and purge: a rotation must not strand a
// value waiting for approval, and rows older than any change request can live are dropped.
import t from "tap";
import pg from "pg";
import { createTestDatabase, startNats } from "@orch/kit/testing";
import { pendingDb } from "../src/db/pending.js";
import { parseKeyring } from "../src/keyring.js";
import {
  ADMIN,
  OPERATOR,
  auditLog,
  newKey,
  noApprovalPolicies,
  secretsClient,
  startSecrets,
  stubApprovals,
} from "./harness.js";

const nats = await startNats();
let approvals = await noApprovalPolicies(nats);
const db = await createTestDatabase();
const keyA = newKey("a");
const keyB = newKey("b");
let svc = await startSecrets(nats, db, keyA);
const nc = await nats.connect("client");
const client = secretsClient(nc);
const audit = auditLog(nc);
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(async () => {
  audit.stop();
  await sql.end();
  await nc.close();
  await svc.stop();
  await approvals.stop();
  await nats.stop();
  await db.drop();
});

const held = (id: string, name: string, value: string | null, createdAt: number) =>
  pendingDb.insert(svc.deps.pool, {
    id,
    op: value === null ? "delete" : "update",
    name,
    sealed: value === null ? null : parseKeyring(keyA).seal(name, value),
    changes: {},
    base_version: "1",
    requester_id: "01OPERATOR",
    createdAt,
  });

t.test("re-encryption moves held values to the active key too", async (t) => {
  await held("01P1", "db", "held-value-1", Date.now());
  await held("01P2", "gone", null, Date.now());
  await svc.stop();
  svc = await startSecrets(nats, db, `${keyB},${keyA}`);
  const r = await client.reencrypt({}, { actor: ADMIN });
  t.equal(r.reencrypted, 0, "no stored secret to move");
  const row = (await sql.query("SELECT * FROM secrets.pending_writes WHERE id = '01P1'")).rows[0];
  t.equal(row.key_id, "b");
  const opened = parseKeyring(keyB).open("db", {
    keyId: row.key_id,
    nonce: row.nonce,
    ciphertext: row.ciphertext,
    tag: row.auth_tag,
  });
  t.equal(opened, "held-value-1", "still the held value, under the new key");
  const ev = await audit.waitFor("secret.reencrypted");
  t.equal(ev.metadata?.pending_writes, 1);
  t.equal((await sql.query("SELECT key_id FROM secrets.pending_writes WHERE id = '01P2'")).rows[0].key_id, null);
});

t.test("rows older than the longest request lifetime are purged", async (t) => {
  const now = Date.now();
  await held("01OLD", "old", null, now - 31 * 24 * 3600 * 1000);
  t.equal(await pendingDb.purgeBefore(svc.deps.pool, now - 30 * 24 * 3600 * 1000), 1);
  const ids = (await sql.query("SELECT id FROM secrets.pending_writes ORDER BY id")).rows.map((r) => r.id);
  t.same(ids, ["01P1", "01P2"]);
});

t.test("a write whose change request cannot be submitted leaves no held value behind", async (t) => {
  await approvals.stop();
  const failing = await stubApprovals(nats, {
    evaluateApproval: async () => ({ required: true, policy: "p", approverIds: [] }),
    submitChangeRequest: async () => {
      throw new Error("auth refused");
    },
  });
  t.teardown(async () => {
    await failing.stop();
    approvals = await noApprovalPolicies(nats);
  });
  const before = (await sql.query("SELECT count(*)::int AS n FROM secrets.pending_writes")).rows[0].n;
  await t.rejects(client.createSecret({ name: "new", value: "new-value-1" }, { actor: OPERATOR }));
  const after = (await sql.query("SELECT count(*)::int AS n FROM secrets.pending_writes")).rows[0].n;
  t.equal(after, before, "the pending row was removed again");
  t.equal((await sql.query("SELECT count(*)::int AS n FROM secrets.secrets WHERE name = 'new'")).rows[0].n, 0);
});

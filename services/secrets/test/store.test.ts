// The store through its RPCs on real NATS and Postgres: CRUD, validation, events, and what lands in
// the table (ciphertext only, fresh per write, moved to the active key by Reencrypt).
import { randomBytes } from "node:crypto";
import t from "tap";
import pg from "pg";
import { createTestDatabase, memoryLogger, startNats } from "@orch/kit/testing";
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

const nats = await startNats();
const approvals = await noApprovalPolicies(nats);
const db = await createTestDatabase();
const keyA = newKey("a");
const keyB = newKey("b");
const mem = memoryLogger("secrets");
let svc = await startSecrets(nats, db, keyA, { log: mem.log });
const nc = await nats.connect("test");
const audit = auditLog(nc);
const client = secretsClient(nc);
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
const row = async (name: string) => (await sql.query("SELECT * FROM secrets.secrets WHERE name = $1", [name])).rows[0];
const count = async () => Number((await sql.query("SELECT count(*) FROM secrets.secrets")).rows[0].count);
const A = "a".repeat(32);

t.test("create stores ciphertext only and emits secret.created without the value", async (t) => {
  const value = `canary-${randomBytes(12).toString("hex")}`;
  const s = await client.createSecret(
    {
      name: "db.password",
      value,
      description: "main db",
      restriction: { nodeIds: [A.toUpperCase()], tags: { env: "prod" } },
    },
    as(OPERATOR),
  );
  t.equal(s.name, "db.password");
  t.equal(s.createdBy, OPERATOR.id);
  t.equal(s.updatedAt, s.createdAt);
  t.same(s.restriction?.nodeIds, [A], "node ids normalised");
  t.notOk("value" in s, "no value field in the reply");
  const r = await row("db.password");
  t.equal(r.key_id, "a");
  t.equal(r.nonce.length, 12);
  t.notOk(r.ciphertext.includes(Buffer.from(value)), "ciphertext is not the plaintext");
  t.not(r.ciphertext.toString("hex"), Buffer.from(value).toString("hex"));
  const ev = await audit.waitFor("secret.created", (e) => e.target?.name === "db.password");
  t.equal(ev.actor?.id, OPERATOR.id);
  t.same(ev.metadata?.restriction, { node_ids: [A], tags: { env: "prod" } });
  t.notOk(JSON.stringify(ev).includes(value), "event carries no value");
});

t.test("two writes of the same value are stored differently", async (t) => {
  await client.createSecret({ name: "twin-1", value: "same" }, as());
  await client.createSecret({ name: "twin-2", value: "same" }, as());
  const [a, b] = [await row("twin-1"), await row("twin-2")];
  t.not(a.nonce.toString("hex"), b.nonce.toString("hex"));
  t.not(a.ciphertext.toString("hex"), b.ciphertext.toString("hex"));
  await client.updateSecret({ name: "twin-1", value: "same" }, as());
  const a2 = await row("twin-1");
  t.not(a2.nonce.toString("hex"), a.nonce.toString("hex"), "rewriting the same value uses a new nonce");
  t.not(a2.ciphertext.toString("hex"), a.ciphertext.toString("hex"));
});

t.test("duplicates and bad input are refused with stable reasons and change nothing", async (t) => {
  const before = await count();
  const dup = await rejection(client.createSecret({ name: "db.password", value: "other" }, as()));
  t.equal(dup.code, "ALREADY_EXISTS");
  t.equal(dup.reason, "secret_exists");
  const V = `echo-${randomBytes(8).toString("hex")}`;
  const cases: Array<[Parameters<typeof client.createSecret>[0], string, string]> = [
    [{ name: "bad name", value: V }, "invalid_name", "name"],
    [{ name: "..", value: V }, "invalid_name", "name"],
    [{ name: "x".repeat(129), value: V }, "invalid_name", "name"],
    [{ name: "empty", value: "" }, "invalid_value", "value"],
    [{ name: "big", value: "x".repeat(64 * 1024 + 1) }, "value_too_large", "value"],
    [{ name: "big2", value: "é".repeat(32 * 1024 + 1) }, "value_too_large", "value"],
    [{ name: "past", value: V, expiresAt: Date.now() - 1000 }, "expires_at_in_past", "expires_at"],
    [{ name: "r1", value: V, restriction: { nodeIds: [], tags: {} } }, "invalid_restriction", "restriction"],
    [
      { name: "r2", value: V, restriction: { nodeIds: ["web-1"], tags: {} } },
      "invalid_restriction",
      "restriction.node_ids.0",
    ],
    [
      { name: "r3", value: V, restriction: { nodeIds: [], tags: { "Env Name": "x" } } },
      "invalid_restriction",
      "restriction.tags.Env Name",
    ],
  ];
  for (const [req, reason, field] of cases) {
    const e = await rejection(client.createSecret(req, as()));
    t.equal(e.code, "INVALID_ARGUMENT", reason);
    t.equal(e.reason, reason);
    t.equal(e.details.field, field);
    if (req.value) t.notOk(e.message.includes(req.value), "message does not echo the value");
  }
  t.equal(await count(), before, "nothing stored");
  const ok = await client.createSecret({ name: "max", value: "x".repeat(64 * 1024) }, as());
  t.equal(ok.name, "max", "exactly 64 KiB is accepted");
});

t.test("update is partial, keeps the name and creation, rotates the ciphertext", async (t) => {
  const created = await client.createSecret(
    { name: "api.token", value: "v1", description: "d", expiresAt: Date.now() + 3_600_000 },
    as(OPERATOR),
  );
  const before = await row("api.token");
  const u1 = await client.updateSecret({ name: "api.token", value: "v2" }, as());
  t.equal(u1.description, "d", "description kept");
  t.equal(u1.expiresAt, created.expiresAt, "expiry kept");
  t.equal(u1.createdBy, OPERATOR.id);
  t.equal(u1.updatedBy, ADMIN.id);
  const after = await row("api.token");
  t.not(after.ciphertext.toString("hex"), before.ciphertext.toString("hex"));
  const ev = await audit.waitFor("secret.updated", (e) => e.target?.name === "api.token");
  t.same(ev.metadata?.changed, ["value"]);
  t.notOk(JSON.stringify(ev).includes('v2"'), "no value in the event");

  const u2 = await client.updateSecret(
    { name: "api.token", description: "", expiresAt: 0, restriction: { nodeIds: [A], tags: {} } },
    as(),
  );
  t.equal(u2.description, "");
  t.equal(u2.expiresAt, 0);
  t.same(u2.restriction?.nodeIds, [A]);
  t.equal(
    (await row("api.token")).ciphertext.toString("hex"),
    after.ciphertext.toString("hex"),
    "metadata-only update leaves the ciphertext",
  );
  const u3 = await client.updateSecret({ name: "api.token", clearRestriction: true }, as());
  t.equal(u3.restriction, undefined);

  const none = await rejection(client.updateSecret({ name: "api.token" }, as()));
  t.equal(none.reason, "nothing_to_update");
  const missing = await rejection(client.updateSecret({ name: "nope", value: "x" }, as()));
  t.equal(missing.code, "NOT_FOUND");
  t.equal(missing.reason, "secret_not_found");
  const past = await rejection(client.updateSecret({ name: "api.token", expiresAt: 1000 }, as()));
  t.equal(past.reason, "expires_at_in_past");
  const badR = await rejection(
    client.updateSecret({ name: "api.token", restriction: { nodeIds: [], tags: {} } }, as()),
  );
  t.equal(badR.reason, "invalid_restriction");
  t.equal(
    (await client.getSecret({ name: "api.token" }, as())).restriction,
    undefined,
    "refused updates changed nothing",
  );
});

t.test("list pages by name; get and delete", async (t) => {
  for (const n of ["p-1", "p-2", "p-3"]) await client.createSecret({ name: n, value: "v" }, as());
  const all: string[] = [];
  let cursor = "";
  for (let i = 0; i < 20; i++) {
    const page = await client.listSecrets({ limit: 2, cursor }, as());
    t.ok(page.secrets.length <= 2);
    all.push(...page.secrets.map((s) => s.name));
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  t.same(all, [...all].sort(), "ordered by name");
  t.equal(all.length, await count(), "every secret once");
  t.equal((await client.getSecret({ name: "p-2" }, as())).name, "p-2");
  await client.deleteSecret({ name: "p-2" }, as());
  t.equal((await rejection(client.getSecret({ name: "p-2" }, as()))).reason, "secret_not_found");
  t.equal((await rejection(client.deleteSecret({ name: "p-2" }, as()))).reason, "secret_not_found");
  const ev = await audit.waitFor("secret.deleted", (e) => e.target?.name === "p-2");
  t.equal(ev.actor?.id, ADMIN.id);
  t.equal((await rejection(client.listSecrets({ limit: 501 }, as()))).reason, "invalid_limit");
});

t.test("rotation and re-encryption: tampered or moved rows are reported, the rest move to the new key", async (t) => {
  await client.createSecret({ name: "tampered", value: "t-value" }, as());
  await client.createSecret({ name: "moved-from", value: "m-value" }, as());
  await client.createSecret({ name: "moved-to", value: "other" }, as());
  await sql.query(
    "UPDATE secrets.secrets SET ciphertext = set_byte(ciphertext, 0, get_byte(ciphertext, 0) # 1) WHERE name = 'tampered'",
  );
  await sql.query(
    `UPDATE secrets.secrets t SET nonce = f.nonce, ciphertext = f.ciphertext, auth_tag = f.auth_tag
       FROM secrets.secrets f WHERE f.name = 'moved-from' AND t.name = 'moved-to'`,
  );
  const total = await count();

  // New key first, old key second.
  await svc.stop();
  svc = await startSecrets(nats, db, `${keyB},${keyA}`, { log: mem.log });
  const refused = await rejection(client.reencrypt({}, as(OPERATOR)));
  t.equal(refused.code, "PERMISSION_DENIED", "reencrypt is admin-only");
  const r = await client.reencrypt({}, as());
  t.equal(r.activeKey, "b");
  t.same([...r.failed].sort(), ["moved-to", "tampered"]);
  t.equal(r.reencrypted, total - 2);
  const keys = (await sql.query("SELECT name, key_id FROM secrets.secrets ORDER BY name")).rows;
  for (const k of keys)
    t.equal(k.key_id, ["moved-to", "tampered"].includes(k.name) ? "a" : "b", `${k.name} on the expected key`);
  const ev = await audit.waitFor("secret.reencrypted");
  t.equal(ev.metadata?.count, total - 2);
  t.same(ev.metadata?.from_keys, ["a"]);
  t.equal(ev.severity, "warning", "failures make it a warning");

  // Drop the broken rows, remove the old key: a second pass has nothing to do.
  await client.deleteSecret({ name: "tampered" }, as());
  await client.deleteSecret({ name: "moved-to" }, as());
  await svc.stop();
  svc = await startSecrets(nats, db, keyB, { log: mem.log });
  const again = await client.reencrypt({}, as());
  t.same({ reencrypted: again.reencrypted, failed: again.failed }, { reencrypted: 0, failed: [] });
});

t.test("reencrypt_on_start moves secrets when the service starts with a new active key", async (t) => {
  const keyC = newKey("c");
  await svc.stop();
  svc = await startSecrets(nats, db, `${keyC},${keyB}`, { log: mem.log, reencryptOnStart: true });
  const keys = (await sql.query("SELECT DISTINCT key_id FROM secrets.secrets")).rows.map((r) => r.key_id);
  t.same(keys, ["c"]);
});

t.test("a key missing from the keyring is reported at start by id, never by value", async (t) => {
  await svc.stop();
  const keyD = newKey("d");
  svc = await startSecrets(nats, db, keyD, { log: mem.log });
  const line = mem.lines.find((l) => l.includes("not in ORCH_SECRETS_KEYS"));
  t.ok(line, "error logged");
  t.match(line!, /"key_id":"c"/);
  const logged = mem.lines.join("");
  for (const k of [keyA, keyB, keyD]) t.notOk(logged.includes(k.split(":")[1]!), "no key material in the log");
  t.notOk(logged.includes("t-value") || logged.includes("m-value"), "no value in the log");
});

import t from "tap";
import pg from "pg";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema } from "@orch/contracts";
import { systemClock, ulidGenerator } from "@orch/kit";
import { createTestDatabase, ed25519, eventually, silentLogger, startNats } from "@orch/kit/testing";
import { buildGateway } from "../src/app.js";
import { gatewayConfigSchema } from "../src/config.js";
import { call, login, startAuth } from "./harness.js";

// Idempotency-Key on writes (docs/http-api.md): the real auth service behind the real gateway
// on a private NATS and a fresh Postgres. The service remembers each keyed reply, so a retry gets
// the first result, also when the first reply was lost because the gateway gave up waiting.
const nats = await startNats();
const db = await createTestDatabase();
const admin = ed25519();
const auth = await startAuth(nats, db, admin);
const gwNc = await nats.connect("gateway");
// A short bus timeout, so the test can make the gateway give up (504) while the service still works.
const config = gatewayConfigSchema.parse({
  http: { port: 0, host: "127.0.0.1" },
  nats: { request_timeout_ms: 1500 },
  gateway: { services: ["auth"] },
});
const ids = ulidGenerator(systemClock);
const { app, tokens } = await buildGateway({ config, log: silentLogger(), nc: gwNc, clock: systemClock, ids });
await app.listen({ port: 0, host: "127.0.0.1" });
const addr = app.server.address();
const url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;

// Every operator.created event the auth service publishes, by operator name.
const observer = await nats.connect("observer");
const created = new Map<string, number>();
observer.subscribe("audit.operator.created", {
  callback: (_e, m) => {
    const name = fromBinary(AuditEventSchema, m.data).target?.name ?? "";
    created.set(name, (created.get(name) ?? 0) + 1);
  },
});
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();

t.teardown(async () => {
  await sql.end();
  await app.close();
  tokens.stop();
  await gwNc.close();
  await auth.stop();
  await db.drop();
  await nats.stop();
});

const token = await login(url, admin);
const withKey = (key: string) => ({ "idempotency-key": key });
const count = async (query: string, values: unknown[] = []) => Number((await sql.query(query, values)).rows[0].count);
const operatorCount = (name: string) => count("SELECT count(*) FROM auth.operators WHERE name = $1", [name]);
/** Waits until the outbox is drained, so every event of what happened so far has been published. */
const eventsSettled = () => eventually(async () => (await count("SELECT count(*) FROM auth.outbox")) === 0);
const addOperator = (name: string, key: string, tok = token, pub = ed25519().publicKeyHex) =>
  call(url, "POST", "/api/v1/operators", { token: tok, body: { name, public_key: pub }, headers: withKey(key) });

t.test("same key and body → the stored result; the change happened once", async (t) => {
  const pub = ed25519().publicKeyHex;
  const first = await addOperator("idem-a", "key-a-1", token, pub);
  t.equal(first.status, 201);
  const again = await addOperator("idem-a", "key-a-1", token, pub);
  t.equal(again.status, 201, "not 409 operator_exists: the handler did not run again");
  t.same(again.body, first.body, "the same body");
  const raw = await fetch(`${url}/api/v1/operators`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...withKey("key-a-1") },
    body: JSON.stringify({ name: "idem-a", public_key: pub }),
  });
  t.equal(raw.headers.get("idempotency-replayed"), "true");
  t.equal(await operatorCount("idem-a"), 1);
  await eventsSettled();
  t.equal(created.get("idem-a"), 1, "one operator.created event");

  // A refusal is a result too: it is replayed, not re-evaluated.
  const dup = await addOperator("idem-a", "key-a-2", token, pub);
  t.equal(dup.status, 409);
  await sql.query("UPDATE auth.operators SET name = 'idem-a-renamed' WHERE name = 'idem-a'");
  const dupAgain = await addOperator("idem-a", "key-a-2", token, pub);
  t.equal(dupAgain.status, 409, "the stored 409, although the name is free now");
  t.equal(dupAgain.body.code, dup.body.code);
});

t.test("same key with another body → 409 idempotency_key_reused, nothing changes", async (t) => {
  t.equal((await addOperator("idem-b", "key-b")).status, 201);
  const other = await addOperator("idem-b2", "key-b");
  t.equal(other.status, 409);
  t.match(other.type, /application\/problem\+json/);
  t.equal(other.body.code, "idempotency_key_reused");
  t.equal(await operatorCount("idem-b2"), 0);
});

t.test("a malformed key → 400 invalid_idempotency_key before anything runs", async (t) => {
  for (const bad of ["has space", "x".repeat(256), 'quote"d', "ünïcode"]) {
    // fetch refuses non-Latin-1 header values itself; what reaches the server is the same class of bad key.
    const header = bad.replace(/[^\x20-\x7e]/g, "?");
    const body = { name: "idem-bad", public_key: ed25519().publicKeyHex };
    const r = await call(url, "POST", "/api/v1/operators", { token, body, headers: { "idempotency-key": header } });
    t.equal(r.status, 400, bad);
    t.equal(r.body.code, "invalid_idempotency_key", bad);
  }
  t.equal(await operatorCount("idem-bad"), 0);
  // The draft's structured-field form ("...") is accepted.
  t.equal((await addOperator("idem-quoted", '"quoted-key"')).status, 201);
});

t.test("the OpenAPI document declares the header on writes only", async (t) => {
  const doc = (await call(url, "GET", "/api/v1/openapi.json")).body;
  const names = (op: { parameters: Array<{ name: string }> }) => op.parameters.map((p) => p.name);
  t.ok(names(doc.paths["/api/v1/operators"].post).includes("Idempotency-Key"));
  t.ok(names(doc.paths["/api/v1/operators/{operator_id}"].delete).includes("Idempotency-Key"));
  t.notOk(names(doc.paths["/api/v1/operators"].get).includes("Idempotency-Key"));
  t.notOk(names(doc.paths["/api/v1/auth/challenge"].post).includes("Idempotency-Key"));
  t.match(doc.paths["/api/v1/operators"].post.responses["409"].description, /idempotency_key_reused/);
});

t.test("keys are per operator: another admin's identical key does not collide", async (t) => {
  const second = ed25519();
  const body = { name: "admin2", public_key: second.publicKeyHex, role: "admin" };
  t.equal((await call(url, "POST", "/api/v1/operators", { token, body })).status, 201);
  const token2 = await login(url, second);
  t.equal((await addOperator("idem-c1", "shared-key")).status, 201);
  const theirs = await addOperator("idem-c2", "shared-key", token2);
  t.equal(theirs.status, 201, "not idempotency_key_reused");
  t.equal(await operatorCount("idem-c2"), 1);
});

t.test("DELETE with a key: the retry gets the first 204, not a 404", async (t) => {
  const op = await addOperator("idem-d", "key-d-create");
  const del = () => call(url, "DELETE", `/api/v1/operators/${op.body.id}`, { token, headers: withKey("key-d-delete") });
  t.equal((await del()).status, 204);
  t.equal((await del()).status, 204);
  const unkeyed = await call(url, "DELETE", `/api/v1/operators/${op.body.id}`, { token });
  t.equal(unkeyed.status, 404, "without the key it runs again");
});

t.test("reply lost (504) after the change committed; the retry returns the original result", async (t) => {
  // Hold the operators table so the create blocks in the service past the gateway's bus timeout.
  const locker = new pg.Client({ connectionString: db.url });
  await locker.connect();
  t.teardown(() => locker.end());
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE auth.operators IN EXCLUSIVE MODE");
  const pub = ed25519().publicKeyHex;
  const lost = await addOperator("idem-lost", "key-lost", token, pub);
  t.equal(lost.status, 504, "the gateway gave up waiting");
  t.equal(lost.body.code, "timeout");
  const early = await addOperator("idem-lost", "key-lost", token, pub);
  t.equal(early.status, 409, "a retry while the first still runs is told so");
  t.equal(early.body.code, "idempotency_key_in_flight");

  await locker.query("COMMIT");
  await eventually(async () => (await operatorCount("idem-lost")) === 1, 10_000);
  const retry = await eventually(async () => {
    const r = await addOperator("idem-lost", "key-lost", token, pub);
    return r.status === 409 && r.body.code === "idempotency_key_in_flight" ? undefined : r;
  }, 10_000);
  t.equal(retry.status, 201, "the original result, not 409 operator_exists");
  t.equal(retry.body.name, "idem-lost");
  t.equal(retry.body.public_key, pub);
  t.equal(await operatorCount("idem-lost"), 1, "one operator");
  await eventsSettled();
  t.equal(created.get("idem-lost"), 1, "one operator.created event");
});

// Last: it takes NATS down. The handler is held until NATS is gone, so its commit and its reply
// happen during the outage; the reply never reaches the gateway.
t.test("reply lost in a NATS outage: committed during the outage, the retry gets the original", async (t) => {
  const locker = new pg.Client({ connectionString: db.url });
  await locker.connect();
  t.teardown(() => locker.end());
  await locker.query("BEGIN");
  await locker.query("LOCK TABLE auth.operators IN EXCLUSIVE MODE");
  const pub = ed25519().publicKeyHex;
  const pending = addOperator("idem-outage", "key-outage", token, pub);
  // The service has claimed the key and is blocked in the handler.
  await eventually(async () => (await count("SELECT count(*) FROM auth.idempotency WHERE key = 'key-outage'")) === 1);
  await nats.kill();
  await locker.query("COMMIT");
  await eventually(async () => (await operatorCount("idem-outage")) === 1, 10_000);
  const lost = await pending;
  t.ok(lost.status === 503 || lost.status === 504, `the client saw ${lost.status}, not the result`);
  const stored = await eventually(async () => {
    const r = await sql.query("SELECT state FROM auth.idempotency WHERE key = 'key-outage'");
    return r.rows[0]?.state === "done";
  });
  t.ok(stored, "the reply was stored although it could not be sent");

  await nats.restart();
  const retry = await eventually(async () => {
    const r = await addOperator("idem-outage", "key-outage", token, pub);
    return r.status === 201 || r.status === 409 || r.status === 400 ? r : undefined;
  }, 20_000);
  t.equal(retry.status, 201, "the original result, not 409 operator_exists");
  t.equal(retry.body.name, "idem-outage");
  t.equal(await operatorCount("idem-outage"), 1, "one operator");
  await eventually(async () => (await count("SELECT count(*) FROM auth.outbox")) === 0, 20_000);
  await eventually(() => created.get("idem-outage") === 1, 10_000);
  await new Promise((r) => setTimeout(r, 500));
  t.equal(created.get("idem-outage"), 1, "one operator.created event");
});

// The canary: a secret with a unique value goes through every secrets endpoint and error path on
// real processes; afterwards the value is searched for, in clear, hex and base64, in every HTTP
// response, every service's debug log, every message on audit.> and every row of every table.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import t, { type Test } from "tap";
import pg from "pg";
import { AgentsService, SecretsService, nodeIdFromPublicKey } from "@orch/contracts";
import { type OrchError, rpcClient } from "@orch/kit";
import { createTestDatabase, ed25519, eventually, startNats, startSystem } from "@orch/kit/testing";

const optional = ["agents", "audit"].filter((s) => existsSync(`services/${s}/dist/main.js`));
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });

// Subscribed before anything starts, so every audit event ever published is seen.
const observer = await nats.connect("observer");
const auditMsgs: Array<{ subject: string; data: Buffer }> = [];
observer.subscribe("audit.>", {
  callback: (_e, m) => void auditMsgs.push({ subject: m.subject, data: Buffer.from(m.data) }),
});

const key = `k1:${randomBytes(32).toString("base64")}`;
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "secrets", ...optional, "gateway"],
  env: { ORCH_LOG_LEVEL: "debug", ORCH_SECRETS_KEYS: key },
});
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(() => sql.end());

const CANARY = `canary-${randomBytes(16).toString("hex")}`;
const CANARY2 = `canary-${randomBytes(16).toString("hex")}`;
const responses: string[] = [];
const adminToken = await system.login(system.admin);

async function api(method: string, path: string, o: { token?: string | null; body?: unknown } = {}) {
  const token = o.token === null ? undefined : (o.token ?? adminToken);
  const r = await system.api(method, `/api/v1${path}`, {
    ...(token ? { token } : {}),
    ...(o.body !== undefined ? { body: o.body } : {}),
  });
  responses.push(`${r.status} ${JSON.stringify([...r.headers.entries()])} ${r.text}`);
  return r;
}
const problem = (
  t: Test,
  r: { status: number; body: any; headers: Headers },
  status: number,
  code: string,
  field?: string,
) => {
  t.equal(r.status, status, `${code}: status`);
  t.match(r.headers.get("content-type") ?? "", /application\/problem\+json/);
  t.equal(r.body?.code, code);
  if (field)
    t.ok(
      r.body?.field === field || r.body?.errors?.some((e: { field: string }) => e.field === field),
      `names ${field}: ${JSON.stringify(r.body)}`,
    );
};
const names = async () =>
  ((await api("GET", "/secrets?limit=500")).body.secrets as Array<{ name: string }>).map((s) => s.name);

// Agents for the resolution paths: registered as their first connect would, then approved or
// rejected through the agents service; without it, Resolve answers that it cannot check.
const agentsRpc = rpcClient(observer, "agents", AgentsService, { timeoutMs: 5000 });
const admin = { actor: { id: "test", name: "test", type: "operator", role: "admin" } };
async function addAgent(status: "approved" | "rejected", name: string, tags: Record<string, string> = {}) {
  const pub = randomBytes(32);
  const nodeId = nodeIdFromPublicKey(pub);
  const now = Date.now();
  await sql.query(
    "INSERT INTO agents.agents (node_id, public_key, status, first_seen, last_seen) VALUES ($1, $2, 'pending', $3, $3)",
    [nodeId, pub.toString("hex"), now],
  );
  await agentsRpc.setApproval({ nodeId, status, name: status === "approved" ? name : "" }, admin);
  if (Object.keys(tags).length) await agentsRpc.replaceTags({ nodeId, tags }, admin);
  return nodeId;
}

t.test("every endpoint and error path, with the canary in play", async (t) => {
  const created = await api("POST", "/secrets", {
    body: { name: "canary", value: CANARY, description: "the canary", restriction: { node_ids: ["a".repeat(32)] } },
  });
  t.equal(created.status, 201);
  t.same(
    Object.keys(created.body).sort(),
    ["created_at", "created_by", "description", "expires_at", "name", "restriction", "updated_at", "updated_by"],
    "metadata only",
  );
  t.same(created.body.restriction, { node_ids: ["a".repeat(32)], tags: {} });

  problem(t, await api("POST", "/secrets", { body: { name: "canary", value: CANARY } }), 409, "secret_exists");
  const before = await names();

  // Bad JSON and wrong types, each carrying the canary.
  const bad: Array<[unknown, number, string, string?]> = [
    [`{"name":"x","value":"${CANARY}"`, 400, "invalid_json"],
    [`{"name":"x","value":"${CANARY}",}`, 400, "invalid_json"],
    [{ name: "x", value: 12345 }, 400, "invalid_request", "value"],
    [`{"name":"x","value":"\\ud800${CANARY}"}`, 400, "invalid_characters", "value"],
    [{ name: 5, value: CANARY }, 400, "invalid_request", "name"],
    [{ name: "x" }, 400, "invalid_request", "value"],
    [{ name: "x", value: CANARY, valu: CANARY }, 400, "invalid_request"],
    [{ name: "x", value: [CANARY] }, 400, "invalid_request", "value"],
    [{ name: "bad name", value: CANARY }, 400, "invalid_request", "name"],
    [{ name: "x", value: "" }, 400, "invalid_request", "value"],
    [{ name: "x", value: CANARY.repeat(2000) }, 400, "invalid_request", "value"],
    [{ name: "x", value: CANARY, description: 7 }, 400, "invalid_request", "description"],
    [{ name: "x", value: CANARY, expires_at: "tomorrow" }, 400, "invalid_request", "expires_at"],
    [{ name: "x", value: CANARY, expires_at: "2001-01-01T00:00:00Z" }, 400, "expires_at_in_past", "expires_at"],
    [{ name: "x", value: CANARY, restriction: "everyone" }, 400, "invalid_restriction", "restriction"],
    [
      { name: "x", value: CANARY, restriction: { node_ids: "abc" } },
      400,
      "invalid_restriction",
      "restriction.node_ids",
    ],
    [
      { name: "x", value: CANARY, restriction: { node_ids: [1] } },
      400,
      "invalid_restriction",
      "restriction.node_ids.0",
    ],
    [
      { name: "x", value: CANARY, restriction: { tags: { env: 1 } } },
      400,
      "invalid_restriction",
      "restriction.tags.env",
    ],
    [{ name: "x", value: CANARY, restriction: { tags: ["env=prod"] } }, 400, "invalid_restriction", "restriction.tags"],
    [{ name: "x", value: CANARY, restriction: { nodes: ["a"] } }, 400, "invalid_restriction", "restriction"],
    [{ name: "x", value: CANARY, restriction: {} }, 400, "invalid_restriction", "restriction"],
    [
      { name: "x", value: CANARY, restriction: { node_ids: ["web-1"] } },
      400,
      "invalid_restriction",
      "restriction.node_ids.0",
    ],
    [
      { name: "x", value: CANARY, restriction: { tags: { "Bad Key": "v" } } },
      400,
      "invalid_restriction",
      "restriction.tags.Bad Key",
    ],
  ];
  for (const [body, status, code, field] of bad)
    problem(t, await api("POST", "/secrets", { body }), status, code, field);
  t.same(await names(), before, "refused requests changed nothing");

  const list = await api("GET", "/secrets");
  t.equal(list.status, 200);
  t.same(Object.keys(list.body).sort(), ["has_more", "next_cursor", "secrets"]);
  t.ok(list.body.secrets.every((s: object) => !("value" in s)));
  problem(t, await api("GET", "/secrets?limit=0"), 400, "invalid_request", "limit");
  t.equal((await api("GET", "/secrets/canary")).body.description, "the canary");
  problem(t, await api("GET", "/secrets/unknown"), 404, "secret_not_found");
  problem(t, await api("GET", "/secrets/bad%20name"), 400, "invalid_request", "name");
  problem(t, await api("GET", "/secrets", { token: null }), 401, "unauthenticated");
  problem(
    t,
    await api("POST", "/secrets", { token: "garbage", body: { name: "x", value: CANARY } }),
    401,
    "invalid_token",
  );

  const upd = await api("PUT", "/secrets/canary", { body: { value: CANARY2 } });
  t.equal(upd.status, 200);
  t.equal(upd.body.description, "the canary", "partial update keeps the rest");
  t.equal(
    (await api("PUT", "/secrets/canary", { body: { description: null, restriction: { tags: { env: "prod" } } } })).body
      .restriction.tags.env,
    "prod",
  );
  problem(t, await api("PUT", "/secrets/canary", { body: {} }), 400, "nothing_to_update");
  problem(t, await api("PUT", "/secrets/canary", { body: { value: 5 } }), 400, "invalid_request", "value");
  problem(
    t,
    await api("PUT", "/secrets/canary", { body: { value: CANARY, restriction: { tags: { env: ["prod"] } } } }),
    400,
    "invalid_restriction",
    "restriction.tags.env",
  );
  problem(t, await api("PUT", "/secrets/canary", { body: `{"value":"${CANARY}"` }), 400, "invalid_json");
  problem(t, await api("PUT", "/secrets/unknown", { body: { value: CANARY } }), 404, "secret_not_found");

  // An operator may manage secrets but not re-encrypt them.
  const opKey = ed25519();
  t.equal((await api("POST", "/operators", { body: { name: "olga", public_key: opKey.publicKeyHex } })).status, 201);
  const opToken = await system.login(opKey);
  t.equal((await api("POST", "/secrets", { token: opToken, body: { name: "op-made", value: CANARY } })).status, 201);
  problem(t, await api("POST", "/secrets/reencrypt", { token: opToken }), 403, "admin_required");
  const re = await api("POST", "/secrets/reencrypt");
  t.equal(re.status, 200);
  t.same(re.body, { active_key: "k1", reencrypted: 0, failed: [] });

  const doc = await api("GET", "/openapi.json");
  for (const p of ["/api/v1/secrets", "/api/v1/secrets/{name}", "/api/v1/secrets/reencrypt"])
    t.ok(doc.body.paths[p], `${p} documented`);
});

t.test("resolution over the bus: allowed, not permitted, not approved, expired, unknown", async (t) => {
  const secrets = rpcClient(observer, "secrets", SecretsService, { timeoutMs: 5000 });
  const refusal = async (name: string, nodeId: string) => {
    try {
      await secrets.resolve({ name, nodeId, operationId: "op-canary" }, admin);
    } catch (err) {
      return err as OrchError;
    }
    throw new Error("resolved unexpectedly");
  };
  t.equal((await refusal("unknown", "a".repeat(32))).reason, "secret_not_found");
  if (!optional.includes("agents")) {
    t.equal((await refusal("canary", "a".repeat(32))).code, "UNAVAILABLE", "no agents service, no answer");
    return;
  }
  const prod = await addAgent("approved", "prod-1", { env: "prod" });
  const dev = await addAgent("approved", "dev-1", { env: "dev" });
  const rejected = await addAgent("rejected", "");
  t.equal(
    (await secrets.resolve({ name: "canary", nodeId: prod, operationId: "op-canary" }, admin)).value,
    CANARY2,
    "allowed node gets the current value",
  );
  const notPermitted = await refusal("canary", dev);
  t.same([notPermitted.code, notPermitted.reason], ["PERMISSION_DENIED", "secret_not_permitted"]);
  t.same([(await refusal("canary", rejected)).reason], ["agent_not_approved"]);
  // Expiry a moment ahead; polled until the service sees it pass.
  t.equal(
    (await api("PUT", "/secrets/canary", { body: { expires_at: new Date(Date.now() + 1500).toISOString() } })).status,
    200,
  );
  const expired = await eventually(async () => {
    const e = await refusal("canary", prod).catch(() => undefined);
    return e?.reason === "secret_expired" ? e : undefined;
  });
  t.equal(expired.code, "FAILED_PRECONDITION");
  const denied = await eventually(
    () => auditMsgs.filter((m) => m.subject === "audit.secret.denied").length >= 4 && auditMsgs,
  );
  t.ok(
    denied.some((m) => m.subject === "audit.secret.used"),
    "the use was recorded",
  );
});

t.test("delete, then search everything for the canary", async (t) => {
  t.equal((await api("DELETE", "/secrets/canary")).status, 204);
  problem(t, await api("DELETE", "/secrets/canary"), 404, "secret_not_found");
  problem(t, await api("DELETE", "/secrets/a..b%2F"), 400, "invalid_request", "name");
  t.equal((await api("DELETE", "/secrets/op-made")).status, 204);
  t.same(await names(), []);

  // Every outbox drained onto the bus, and the audit service (if running) has stored them.
  const schemas = (
    await sql.query("SELECT table_schema FROM information_schema.tables WHERE table_name = 'outbox'")
  ).rows.map((r) => r.table_schema as string);
  await eventually(async () => {
    for (const s of schemas)
      if (Number((await sql.query(`SELECT count(*) FROM ${s}.outbox`)).rows[0].count) > 0) return false;
    return auditMsgs.some((m) => m.subject === "audit.secret.deleted");
  }, 20_000);
  t.ok(auditMsgs.filter((m) => m.subject.startsWith("audit.secret.")).length >= 8, "secret events were published");
  await system.stop();

  const tables = (
    await sql.query(
      "SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')",
    )
  ).rows;
  t.ok(tables.some((r) => r.table_schema === "secrets" && r.table_name === "secrets"));
  let dump = "";
  for (const { table_schema, table_name } of tables) {
    const rows = await sql.query(`SELECT t::text AS row FROM "${table_schema}"."${table_name}" t`);
    dump += `${table_schema}.${table_name}\n${rows.rows.map((r) => r.row).join("\n")}\n`;
  }
  const logs = system.output();
  t.ok(logs.includes('"service":"secrets"') && logs.includes('"level":20'), "debug logs were captured");
  const bus = auditMsgs.map((m) => `${m.subject} ${m.data.toString("latin1")} ${m.data.toString("utf8")}`).join("\n");
  const places: Record<string, string> = {
    "HTTP responses": responses.join("\n"),
    "service logs": logs,
    "audit.> messages": bus,
    "database tables": dump,
  };
  for (const c of [CANARY, CANARY2]) {
    for (const form of encodings(c)) {
      for (const [where, text] of Object.entries(places))
        t.notOk(text.includes(form), `${where} do not contain the canary (${form.slice(0, 12)}…)`);
    }
  }
  const keyB64 = key.slice(key.indexOf(":") + 1);
  for (const form of [keyB64, Buffer.from(keyB64, "base64").toString("hex")]) {
    for (const [where, text] of Object.entries(places))
      t.notOk(text.includes(form), `${where} do not contain the encryption key`);
  }
  // Positive controls: the same search finds what is supposed to be there.
  t.ok(
    places["HTTP responses"]!.includes("the canary") && places["audit.> messages"]!.includes("the canary"),
    "the description is visible where expected",
  );
  t.ok(places["database tables"]!.includes(system.admin.publicKeyHex), "the dump holds real rows");
});

/** The value in clear, hex and base64/base64url at every byte alignment (edges that mix in neighbours dropped). */
function encodings(value: string): string[] {
  const raw = Buffer.from(value);
  const out = new Set([value, raw.toString("hex"), raw.toString("hex").toUpperCase(), encodeURIComponent(value)]);
  for (let pad = 0; pad < 3; pad++) {
    const shifted = Buffer.concat([Buffer.alloc(pad), raw]);
    for (const enc of ["base64", "base64url"] as const) {
      const s = shifted.toString(enc).replace(/=+$/, "");
      out.add(s.slice(Math.ceil((pad * 4) / 3), s.length - 4));
    }
  }
  return [...out];
}

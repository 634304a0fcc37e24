// Four-eyes secret writes (secret.write, docs/approvals.md) on real processes (auth, secrets,
// gateway): a policy with selector `*` holds alice's writes for bob. A held write changes nothing,
// its value waits sealed in the secrets service (never in the change request), and bob's approval
// writes it once as alice. Afterwards both values are searched for everywhere they must not be.
// Needs `npm run build` (services, cli, contracts, kit).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import t, { type Test } from "tap";
import pg from "pg";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, SecretsService, contentHash, type AuditEvent } from "@orch/contracts";
import { rpcClient, type Actor } from "@orch/kit";
import { createTestDatabase, ed25519, eventually, startNats, startSystem } from "@orch/kit/testing";
import { parseKeyring } from "../../services/secrets/src/keyring.js";

const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
// Subscribed before anything starts, so every audit event ever published is seen.
const observer = await nats.connect("observer");
const audit: Array<{ raw: Buffer; ev: AuditEvent }> = [];
observer.subscribe("audit.>", {
  callback: (_e, m) => void audit.push({ raw: Buffer.from(m.data), ev: fromBinary(AuditEventSchema, m.data) }),
});
const key = `k1:${randomBytes(32).toString("base64")}`;
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "secrets", "gateway"],
  env: { ORCH_LOG_LEVEL: "debug", ORCH_SECRETS_KEYS: key },
});
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(() => sql.end());

const VALUE1 = `held-${randomBytes(16).toString("hex")}`;
const VALUE2 = `held-${randomBytes(16).toString("hex")}`;
const responses: string[] = [];

type Res = Awaited<ReturnType<typeof system.api>>;
const as = (token: string) => async (method: string, path: string, body?: unknown) => {
  const r = await system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
  responses.push(`${r.status} ${r.text}`);
  return r;
};
const must = async (p: Promise<Res>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};
const problem = (t: Test, r: Res, status: number, code: string) => {
  t.equal(r.status, status, `status ${status}`);
  t.equal(r.body?.code, code, `code ${code}`);
};
const admin = as(await system.login(system.admin));
async function operator(name: string) {
  const k = ed25519();
  const op = await must(admin("POST", "/operators", { name, public_key: k.publicKeyHex, role: "operator" }), 201);
  return { id: op.id as string, key: k, api: as(await system.login(k)) };
}
const alice = await operator("alice"); // writes
const bob = await operator("bob"); // approves

/** What Resolve would hand out: the stored ciphertext opened with the service's key. */
async function stored(name: string): Promise<string | undefined> {
  const r = (await sql.query("SELECT key_id, nonce, ciphertext, auth_tag FROM secrets.secrets WHERE name = $1", [name]))
    .rows[0];
  if (!r) return undefined;
  return parseKeyring(key).open(name, { keyId: r.key_id, nonce: r.nonce, ciphertext: r.ciphertext, tag: r.auth_tag });
}
const eventsOf = (type: string) => audit.filter((a) => a.ev.eventType === type).map((a) => a.ev);
const meta = (e: AuditEvent) => (e.metadata ?? {}) as Record<string, any>;

t.test("a secret write no policy covers is not held", async (t) => {
  const r = await must(alice.api("POST", "/secrets", { name: "free", value: "free-value-1" }), 201);
  t.equal(r.name, "free");
  t.equal(await stored("free"), "free-value-1");
  await must(alice.api("POST", "/secrets", { name: "free-2", value: "free-value-2" }), 201);
  t.equal((await alice.api("DELETE", "/secrets/free-2")).status, 204, "a delete no policy holds answers 204");
  t.equal((await alice.api("PUT", "/secrets/free", { description: "d" })).status, 200);
});

t.test("the policy holding secret.write (selector *, bob approves)", async () => {
  await must(
    admin("PUT", "/approval-policies/secret-writes", {
      actions: ["secret.write"],
      selector: "*",
      approvals_required: 1,
      approvers: ["operator:bob"],
      expires_after_seconds: 3600,
    }),
    200,
  );
});

let created: any;
t.test("alice's create is held: 202, nothing stored, the request has no value", async (t) => {
  const r = await alice.api("POST", "/secrets", {
    name: "db-password",
    value: VALUE1,
    description: "primary",
    reason: "new database",
  });
  t.equal(r.status, 202, r.text);
  t.equal(r.body.status, "held");
  t.equal(r.body.summary, "create secret db-password");
  problem(t, await alice.api("GET", "/secrets/db-password"), 404, "secret_not_found");
  t.equal(await stored("db-password"), undefined, "no secret row");
  created = await must(alice.api("GET", `/change-requests/${r.body.change_request_id}`), 200);
  t.equal(created.status, "pending");
  t.equal(created.action, "secret.write");
  t.equal(created.target_type, "secret");
  t.equal(created.target_name, "db-password");
  t.equal(created.reason, "new database");
  t.match(created.content, { op: "create", name: "db-password", value_changed: true, description: "primary" });
  t.equal(created.content.base_version, null);
  t.equal(created.content_hash, contentHash(created.content), "the hash is the canonical hash of the content");
  t.notOk(JSON.stringify(created).includes(VALUE1), "the request does not carry the value");
  const pending = await sql.query(
    "SELECT op, executed_at, ciphertext IS NOT NULL AS sealed FROM secrets.pending_writes",
  );
  t.same(pending.rows, [{ op: "create", executed_at: null, sealed: true }], "the value waits sealed");
});

t.test("break-glass: operators are refused, admins need a reason; neither writes", async (t) => {
  const body = { name: "bg", value: "bg-value-1", break_glass: true };
  problem(t, await alice.api("POST", "/secrets", { ...body, reason: "outage" }), 403, "break_glass_forbidden");
  problem(t, await admin("POST", "/secrets", body), 400, "break_glass_reason_required");
  problem(t, await admin("GET", "/secrets/bg"), 404, "secret_not_found");
  t.equal(eventsOf("approval.bypassed").length, 0);
});

t.test("bob approves: the secret is created once, as alice, with bob recorded", async (t) => {
  const cr = await must(bob.api("POST", `/change-requests/${created.id}/approve`, { comment: "ok" }), 200);
  t.equal(cr.status, "executed", JSON.stringify(cr));
  const s = await must(bob.api("GET", "/secrets/db-password"), 200);
  t.equal(s.created_by, alice.id, "created as the requester");
  t.equal(s.description, "primary");
  t.equal(await stored("db-password"), VALUE1, "the value alice sent");
  const ev = await eventually(() => eventsOf("secret.created").find((e) => e.target?.name === "db-password"));
  t.equal(ev.actor?.name, "alice");
  t.equal(meta(ev).change_request_id, created.id);
  t.same(meta(ev).approved_by, ["bob"]);
  const row = (await sql.query("SELECT executed_at, result, ciphertext FROM secrets.pending_writes")).rows[0];
  t.ok(row.executed_at, "the held write is marked executed");
  t.equal(row.ciphertext, null, "its copy of the value is dropped");
  t.equal(row.result, cr.result, "the request's result is the secret's version");

  // A retried execution (auth's commit lost) answers the same result and writes nothing again.
  const nc = await nats.connect("retry");
  t.teardown(() => nc.close());
  const secrets = rpcClient(nc, "secrets", SecretsService, { timeoutMs: 5000 });
  const asAlice: Actor = { id: alice.id, name: "alice", type: "operator", role: "operator" };
  const again = await secrets.executeChangeRequest(
    {
      id: created.id,
      action: "secret.write",
      targetName: "db-password",
      contentHash: created.content_hash,
      approvers: ["bob"],
      content: created.content,
    },
    { actor: asAlice },
  );
  t.equal(again.result, cr.result, "same result");
  t.equal(eventsOf("secret.created").filter((e) => e.target?.name === "db-password").length, 1, "written once");
});

t.test("an update held, then changed by a break-glass admin: approval refused with plan_changed", async (t) => {
  const r = await alice.api("PUT", "/secrets/db-password", { value: VALUE2, description: "rotated" });
  t.equal(r.status, 202, r.text);
  t.equal(r.body.summary, "update secret db-password (value and description)");
  t.equal(await stored("db-password"), VALUE1, "unchanged while held");
  const cr = await must(alice.api("GET", `/change-requests/${r.body.change_request_id}`), 200);
  t.match(cr.content, { op: "update", value_changed: true, description: "rotated" });
  t.ok(cr.content.base_version, "frozen on the secret's version");

  const bg = await admin("PUT", "/secrets/db-password", { description: "hotfix", break_glass: true, reason: "INC-7" });
  t.equal(bg.status, 200, bg.text);
  const bypass = await eventually(() => eventsOf("approval.bypassed")[0]);
  t.equal(bypass.severity, "critical");
  t.equal(meta(bypass).policy, "secret-writes");
  t.equal(meta(bypass).reason, "INC-7");
  t.same(meta(bypass).notify_operator_ids, [bob.id], "addressed to the approvers");

  problem(t, await bob.api("POST", `/change-requests/${cr.id}/approve`, {}), 409, "plan_changed");
  t.equal((await must(bob.api("GET", `/change-requests/${cr.id}`), 200)).status, "pending", "stays pending");
  t.equal(await stored("db-password"), VALUE1, "the held value was not written");
  t.equal((await must(bob.api("GET", "/secrets/db-password"), 200)).description, "hotfix");
  await must(alice.api("POST", `/change-requests/${cr.id}/cancel`, {}), 200);
});

t.test("a held update without a change of value, approved", async (t) => {
  const r = await must(alice.api("PUT", "/secrets/db-password", { description: "reviewed" }), 202);
  t.equal(r.summary, "update secret db-password (description)");
  const cr = await must(bob.api("POST", `/change-requests/${r.change_request_id}/approve`, {}), 200);
  t.equal(cr.status, "executed");
  const s = await must(bob.api("GET", "/secrets/db-password"), 200);
  t.equal(s.description, "reviewed");
  t.equal(s.updated_by, alice.id);
  t.equal(await stored("db-password"), VALUE1, "the value is untouched");
});

t.test("a delete held, then approved, deletes", async (t) => {
  const r = await alice.api("DELETE", "/secrets/db-password", { reason: "decommissioned" });
  t.equal(r.status, 202, r.text);
  t.equal(r.body.summary, "delete secret db-password");
  await must(alice.api("GET", "/secrets/db-password"), 200);
  const cr = await must(bob.api("POST", `/change-requests/${r.body.change_request_id}/approve`, {}), 200);
  t.equal(cr.status, "executed");
  problem(t, await alice.api("GET", "/secrets/db-password"), 404, "secret_not_found");
  const ev = await eventually(() => eventsOf("secret.deleted").find((e) => e.target?.name === "db-password"));
  t.equal(ev.actor?.name, "alice");
  t.same(meta(ev).approved_by, ["bob"]);
});

t.test("a held create whose name was taken since is refused with plan_changed", async (t) => {
  const r = await must(alice.api("POST", "/secrets", { name: "race", value: "race-value-1" }), 202);
  await must(admin("POST", "/secrets", { name: "race", value: "race-value-2", break_glass: true, reason: "now" }), 201);
  problem(t, await bob.api("POST", `/change-requests/${r.change_request_id}/approve`, {}), 409, "plan_changed");
  t.equal(await stored("race"), "race-value-2");
});

const ORCHCTL = fileURLToPath(new URL("../../cli/dist/main.js", import.meta.url));
const home = mkdtempSync(join(tmpdir(), "orch-approvals-secrets-"));
t.teardown(() => rmSync(home, { recursive: true, force: true }));
/** orchctl as a process, logged in as alice, the value piped on stdin. */
function orchctl(args: string[], stdin = ""): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, HOME: home, ORCHCTL_HOME: join(home, "home"), ORCH_URL: system.url };
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [ORCHCTL, ...args], { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d) => (stdout += d));
    p.stderr.on("data", (d) => (stderr += d));
    p.on("error", reject);
    p.on("close", (code) => {
      responses.push(stdout, stderr);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    p.stdin.end(stdin);
  });
}

t.test("orchctl: a held write prints the request and exits 0; --break-glass needs --reason", async (t) => {
  const pem = join(home, "alice.pem");
  writeFileSync(pem, alice.key.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  t.equal((await orchctl(["login", "--key", pem])).code, 0);
  const set = await orchctl(["secrets", "set", "cli-secret", "--reason", "from the cli"], `${VALUE2}\n`);
  t.equal(set.code, 0, set.stderr);
  const m = /^secret write held for approval: change request (\S+) — orchctl requests show \1$/m.exec(set.stdout);
  t.ok(m, set.stdout);
  const cr = await must(bob.api("GET", `/change-requests/${m![1]}`), 200);
  t.equal(cr.reason, "from the cli");
  t.equal(cr.content.op, "create");
  const rm = await orchctl(["--json", "secrets", "rm", "free", "--reason", "cleanup"]);
  t.equal(rm.code, 0, rm.stderr);
  t.match(JSON.parse(rm.stdout), { status: "held", summary: "delete secret free" });
  const bg = await orchctl(["secrets", "rm", "free", "--break-glass"]);
  t.equal(bg.code, 1);
  t.match(bg.stderr, /--break-glass needs --reason/);
  await must(alice.api("GET", "/secrets/free"), 200);
});

t.test("neither value is in any response, log, event or change request", async (t) => {
  const requests = await must(admin("GET", "/change-requests?limit=100"), 200);
  t.ok(requests.requests.length >= 4);
  const places: Record<string, string> = {
    "HTTP responses": responses.join("\n"),
    "change requests": JSON.stringify(requests),
    "service logs": system.output(),
    "audit events": audit.map((a) => `${a.raw.toString("latin1")} ${a.raw.toString("utf8")}`).join("\n"),
  };
  t.ok(places["service logs"]!.includes('"level":20'), "debug logs were captured");
  for (const v of [VALUE1, VALUE2]) {
    const forms = [v, Buffer.from(v).toString("hex"), Buffer.from(v).toString("base64")];
    for (const form of forms)
      for (const [where, text] of Object.entries(places))
        t.notOk(text.includes(form), `${where}: no value (${form.slice(0, 10)}…)`);
  }
});

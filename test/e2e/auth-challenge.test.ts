import t, { type Test } from "tap";
import pg from "pg";
import { createTestDatabase, ed25519, eventually, startNats, startSystem } from "@orch/kit/testing";

// The login challenge (seed API: "fails for an invalid public key, and for an unknown or inactive
// operator") with the real auth, audit, notify and gateway processes: the refusal is a 401, stays
// out of every inbox, and the per-address sign-in budget still applies.
const RATE_PER_MINUTE = 30;
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const sys = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "audit", "gateway", "notify"],
  env: {
    ORCH_NOTIFY_POLL_MS: "100",
    ORCH_NOTIFY_OPERATORS_CACHE_MS: "0",
    ORCH_GATEWAY_AUTH_RATE_LIMIT_PER_MINUTE: String(RATE_PER_MINUTE),
  },
});
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(() => sql.end());

const token = await sys.login(sys.admin);
const api = (method: string, path: string, body?: unknown) =>
  sys.api(method, path, { token, ...(body !== undefined ? { body } : {}) });
const challenge = (publicKey: string) => sys.api("POST", "/api/v1/auth/challenge", { body: { public_key: publicKey } });
const isProblem = (t: Test, r: Awaited<ReturnType<typeof challenge>>, status: number, code: string) => {
  t.equal(r.status, status, `status ${status}`);
  t.match(r.headers.get("content-type"), /^application\/problem\+json/);
  t.equal(r.body?.code, code, `code ${code}`);
  t.equal(r.body?.status, status);
};
type Failure = { severity: string; metadata: Record<string, unknown> };
const failuresFor = async (publicKey: string) =>
  ((await api("GET", "/api/v1/audit?event_type=auth.login.failed&limit=200")).body.events as Failure[]).filter(
    (e) => e.metadata.public_key === publicKey,
  );
type Notification = { event_type: string; summary: string };
const loginFailedNotifications = async () =>
  ((await api("GET", "/api/v1/notifications?limit=200")).body.notifications as Notification[]).filter(
    (n) => n.event_type === "auth.login.failed",
  );

t.test("an unknown key and an inactive operator's key: 401 unknown_operator problem+json", async (t) => {
  isProblem(t, await challenge(ed25519().publicKeyHex), 401, "unknown_operator");

  const dormant = ed25519();
  t.equal((await api("POST", "/api/v1/operators", { name: "dormant", public_key: dormant.publicKeyHex })).status, 201);
  t.equal((await challenge(dormant.publicKeyHex)).status, 200, "active: a nonce");
  // No API deactivates an operator; the row's flag is what the challenge reads.
  await sql.query("UPDATE auth.operators SET active = false WHERE name = 'dormant'");
  const refused = await challenge(dormant.publicKeyHex);
  isProblem(t, refused, 401, "unknown_operator");
  t.notOk("nonce" in refused.body, "no nonce");

  isProblem(t, await challenge("zz"), 400, "invalid_public_key");
});

t.test("5 unknown-key challenges are audited at info and notify nobody", async (t) => {
  const stranger = ed25519().publicKeyHex;
  for (let i = 0; i < 5; i++) isProblem(t, await challenge(stranger), 401, "unknown_operator");
  const quiet = await eventually(async () => {
    const evs = await failuresFor(stranger);
    return evs.length === 5 ? evs : undefined;
  }, 20_000);
  for (const e of quiet) {
    t.equal(e.severity, "info");
    t.equal(e.metadata.reason, "unknown_operator");
    t.equal(e.metadata.known_operator, false);
    t.match(e.metadata.remote_address, /\S/, "the caller's address is recorded");
  }

  // A failure that does notify, after them: notify handles events in stream order, so once its
  // notification is in the inbox every earlier event has been judged.
  const fred = ed25519();
  t.equal((await api("POST", "/api/v1/operators", { name: "fred", public_key: fred.publicKeyHex })).status, 201);
  const ch = await challenge(fred.publicKeyHex);
  t.equal(ch.status, 200);
  const wrong = await sys.api("POST", "/api/v1/auth/verify", {
    body: { public_key: fred.publicKeyHex, nonce: ch.body.nonce, signature: "00".repeat(64) },
  });
  t.equal(wrong.status, 401);
  const inbox = await eventually(async () => {
    const ns = await loginFailedNotifications();
    return ns.some((n) => n.summary.includes("fred")) ? ns : undefined;
  }, 20_000);
  t.same(
    inbox.map((n) => n.summary),
    ["login failed for fred: invalid_signature"],
    "only the known operator's failure reached the admin's inbox",
  );
});

t.test("challenges stay throttled per client address: 429 rate_limited", async (t) => {
  // The budget is shared by every sign-in route; earlier tests spent part of it, and it refills
  // slowly (RATE_PER_MINUTE), so enough tries are sure to drain it.
  let r: Awaited<ReturnType<typeof challenge>> | undefined;
  for (let i = 0; i < RATE_PER_MINUTE * 3 && r?.status !== 429; i++) r = await challenge(ed25519().publicKeyHex);
  isProblem(t, r!, 429, "rate_limited");
  t.match(r!.headers.get("retry-after"), /^\d+$/);
  t.equal((await challenge(sys.admin.publicKeyHex)).status, 429, "known keys share the address's budget");
});

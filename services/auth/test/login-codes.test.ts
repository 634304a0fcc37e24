import t from "tap";
import { isUnnotified } from "@orch/contracts";
import { OrchError } from "@orch/kit";
import { eventually } from "@orch/kit/testing";
import { sessionsDb } from "../src/db/sessions.js";
import { hashToken } from "../src/handlers/login.js";
import { authClient, authTestbed, busObserver, manualClock } from "./harness.js";

// One-time console login codes over the bus, as the gateway calls them: issued to the calling
// operator, exchanged once for a console session that Authenticate accepts like any token.
const clock = manualClock();
const { nats, auth, addOperator } = await authTestbed(t, { clock });
const bus = await busObserver(nats);
const client = await authClient(nats);
const pool = auth.deps.pool;

const reasonOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof OrchError) return `${err.code}/${err.reason}`;
    throw err;
  }
  return "ok";
};
const eventsOf = (type: string, pred: (m: Record<string, unknown>) => boolean, n = 1) =>
  eventually(() => {
    const evs = bus.events.filter((e) => e.eventType === type && pred(e.metadata as Record<string, unknown>));
    return evs.length >= n ? evs : undefined;
  });

t.test("create → exchange → the console token authenticates; the code works once", async (t) => {
  const { op, actor } = await addOperator("carol");
  const lc = await client.createLoginCode({}, { actor });
  t.match(lc.code, /^[A-Za-z0-9_-]{43}$/, "32 random bytes, base64url");
  t.equal(lc.expiresAt, clock.now() + 60_000, "LOGIN_CODE_TTL_SECONDS");
  const stored = await pool.query("SELECT hash, operator_id FROM login_codes");
  t.same(stored.rows, [{ hash: hashToken(lc.code), operator_id: op.id }], "only the hash is stored");

  const v = await client.exchangeLoginCode({ code: lc.code, remoteAddress: "192.0.2.7" });
  t.equal(v.operator?.name, "carol");
  t.equal(v.expiresAt, clock.now() + 12 * 3_600_000, "console_session_ttl_hours");
  const p = await client.authenticate({ token: v.token });
  t.equal(p.operator?.id, op.id, "Authenticate resolves the console token unchanged");
  const row = await pool.query("SELECT kind, via, passkey_id FROM tokens WHERE hash = $1", [hashToken(v.token)]);
  t.same(row.rows, [{ kind: "console", via: "login_code", passkey_id: null }]);
  t.equal((await pool.query("SELECT 1 FROM login_codes")).rowCount, 0, "spent");

  t.equal(
    await reasonOf(client.exchangeLoginCode({ code: lc.code, remoteAddress: "" })),
    "UNAUTHENTICATED/invalid_login_code",
  );

  const created = await eventsOf("auth.login_code.created", () => true);
  t.equal(created[0]!.actor?.id, op.id);
  const ok = await eventsOf("auth.login.succeeded", (m) => m.method === "login_code");
  t.equal(ok[0]!.target?.name, "carol");
  t.equal((ok[0]!.metadata as Record<string, unknown>).remote_address, "192.0.2.7");
  const failed = await eventsOf("auth.login.failed", (m) => m.reason === "invalid_login_code");
  t.equal((failed[0]!.metadata as Record<string, unknown>).method, "login_code");
  t.ok(isUnnotified(failed[0]!.metadata as Record<string, unknown>), "an unknown code notifies nobody");
});

t.test("an unknown code is refused", async (t) => {
  t.equal(
    await reasonOf(client.exchangeLoginCode({ code: "nope", remoteAddress: "" })),
    "UNAUTHENTICATED/invalid_login_code",
  );
});

t.test("an expired code is refused and spent", async (t) => {
  const { op, actor } = await addOperator("dave");
  const lc = await client.createLoginCode({}, { actor });
  clock.advance(60_000);
  t.equal(
    await reasonOf(client.exchangeLoginCode({ code: lc.code, remoteAddress: "" })),
    "UNAUTHENTICATED/login_code_expired",
  );
  t.equal(
    await reasonOf(client.exchangeLoginCode({ code: lc.code, remoteAddress: "" })),
    "UNAUTHENTICATED/invalid_login_code",
    "single use whatever the outcome",
  );
  const failed = await eventsOf("auth.login.failed", (m) => m.reason === "login_code_expired");
  t.equal(failed[0]!.target?.id, op.id, "the code names its operator");
  t.equal(failed[0]!.severity, "warning", "the first failure of a known operator's window notifies");
});

t.test("an inactive operator's code is refused; a removed operator's codes are gone", async (t) => {
  const { op, actor } = await addOperator("erin");
  const lc = await client.createLoginCode({}, { actor });
  await pool.query("UPDATE operators SET active = false WHERE id = $1", [op.id]);
  t.equal(
    await reasonOf(client.exchangeLoginCode({ code: lc.code, remoteAddress: "" })),
    "UNAUTHENTICATED/unknown_operator",
  );
  t.equal(await reasonOf(client.createLoginCode({}, { actor })), "UNAUTHENTICATED/unknown_operator");

  const frank = await addOperator("frank");
  const lc2 = await client.createLoginCode({}, { actor: frank.actor });
  await client.removeOperator({ id: "frank" }, { actor: { id: "system", name: "system", type: "system", role: "" } });
  t.equal(
    await reasonOf(client.exchangeLoginCode({ code: lc2.code, remoteAddress: "" })),
    "UNAUTHENTICATED/invalid_login_code",
  );
});

t.test("a system caller gets no login code", async (t) => {
  t.equal(await reasonOf(client.createLoginCode({})), "PERMISSION_DENIED/operator_required");
});

t.test("removing an operator revokes its console sessions", async (t) => {
  const { op, actor } = await addOperator("gina");
  const lc = await client.createLoginCode({}, { actor });
  const v = await client.exchangeLoginCode({ code: lc.code, remoteAddress: "" });
  t.equal((await client.authenticate({ token: v.token })).operator?.id, op.id);
  const before = bus.revocations.length;
  const admin = { id: "system", name: "system", type: "system", role: "" };
  await client.removeOperator({ id: op.id }, { actor: admin });
  t.equal(await reasonOf(client.authenticate({ token: v.token })), "UNAUTHENTICATED/invalid_token");
  t.equal((await pool.query("SELECT 1 FROM tokens WHERE hash = $1", [hashToken(v.token)])).rowCount, 0);
  const r = await eventually(() => bus.revocations.slice(before).find((x) => x.operatorId === op.id));
  t.ok(r, "gateways are told to drop the operator's cached tokens");
});

t.test("the purge removes expired codes and challenges", async (t) => {
  const { actor } = await addOperator("hana");
  await client.createLoginCode({}, { actor });
  await client.beginPasskeyLogin({ rpId: "localhost", origin: "http://localhost:1" });
  clock.advance(61_000);
  await sessionsDb.purgeExpired(pool, clock.now());
  t.equal((await pool.query("SELECT 1 FROM login_codes")).rowCount, 0);
  t.equal((await pool.query("SELECT 1 FROM webauthn_challenges")).rowCount, 0);
});

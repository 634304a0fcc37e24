import t, { type Test } from "tap";
import { sign } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, isUnnotified, type AuditEvent } from "@orch/contracts";
import { createTestDatabase, ed25519, startNats, eventually } from "@orch/kit/testing";
import { call, login, manualClock, startAuth, startGateway } from "./harness.js";

const nats = await startNats();
const db = await createTestDatabase();
const clock = manualClock();
const admin = ed25519();
const auth = await startAuth(nats, db, admin, clock);
const gw = await startGateway(nats, clock);
t.teardown(async () => {
  await gw.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});

const signNonce = (nonce: string, key = admin) => sign(null, Buffer.from(nonce, "hex"), key.privateKey).toString("hex");
const problemJson = (t: Test, r: { status: number; type: string; body: any }, status: number, code: string) => {
  t.equal(r.status, status, `status ${status}`);
  t.match(r.type, /application\/problem\+json/);
  t.equal(r.body?.code, code, `code ${code}`);
  t.equal(r.body?.status, status);
  t.type(r.body?.detail, "string");
};

t.test("bootstrap admin logs in; whoami shows it", async (t) => {
  const token = await login(gw.url, admin);
  const me = await call(gw.url, "GET", "/api/v1/auth/whoami", { token });
  t.equal(me.status, 200);
  t.equal(me.body.role, "admin");
  t.equal(me.body.public_key, admin.publicKeyHex);
});

t.test("no token, garbage token, expired token → 401 problem+json", async (t) => {
  problemJson(t, await call(gw.url, "GET", "/api/v1/operators"), 401, "unauthenticated");
  problemJson(t, await call(gw.url, "GET", "/api/v1/operators", { token: "garbage" }), 401, "invalid_token");
  problemJson(
    t,
    await call(gw.url, "GET", "/api/v1/operators", { headers: { authorization: "Basic abc" } }),
    401,
    "unauthenticated",
  );
  const token = await login(gw.url, admin);
  t.equal((await call(gw.url, "GET", "/api/v1/operators", { token })).status, 200);
  clock.advance(12 * 3_600_000 + 1000);
  problemJson(t, await call(gw.url, "GET", "/api/v1/operators", { token }), 401, "invalid_token");
});

t.test("nonce rules: reuse, expiry, another key's signature → 401; malformed key → 400", async (t) => {
  const ch = await call(gw.url, "POST", "/api/v1/auth/challenge", { body: { public_key: admin.publicKeyHex } });
  t.equal(ch.status, 200);
  t.match(ch.body.nonce, /^[0-9a-f]{64}$/);
  const body = { public_key: admin.publicKeyHex, nonce: ch.body.nonce, signature: signNonce(ch.body.nonce) };
  t.equal((await call(gw.url, "POST", "/api/v1/auth/verify", { body })).status, 200);
  problemJson(t, await call(gw.url, "POST", "/api/v1/auth/verify", { body }), 401, "invalid_nonce");

  const ch2 = await call(gw.url, "POST", "/api/v1/auth/challenge", { body: { public_key: admin.publicKeyHex } });
  clock.advance(61_000);
  problemJson(
    t,
    await call(gw.url, "POST", "/api/v1/auth/verify", {
      body: { public_key: admin.publicKeyHex, nonce: ch2.body.nonce, signature: signNonce(ch2.body.nonce) },
    }),
    401,
    "invalid_nonce",
  );

  const other = ed25519();
  const ch3 = await call(gw.url, "POST", "/api/v1/auth/challenge", { body: { public_key: admin.publicKeyHex } });
  problemJson(
    t,
    await call(gw.url, "POST", "/api/v1/auth/verify", {
      body: { public_key: admin.publicKeyHex, nonce: ch3.body.nonce, signature: signNonce(ch3.body.nonce, other) },
    }),
    401,
    "invalid_signature",
  );

  problemJson(
    t,
    await call(gw.url, "POST", "/api/v1/auth/challenge", { body: { public_key: "zz" } }),
    400,
    "invalid_public_key",
  );
  problemJson(
    t,
    await call(gw.url, "POST", "/api/v1/auth/challenge", { body: { public_key: 42 } }),
    400,
    "invalid_request",
  );
  problemJson(t, await call(gw.url, "POST", "/api/v1/auth/challenge", { raw: "{not json" }), 400, "invalid_json");
});

t.test("unknown and inactive operators are refused at the challenge: 401, audited quietly, no nonce", async (t) => {
  const observer = await nats.connect("observer");
  t.teardown(() => observer.close());
  const seen: AuditEvent[] = [];
  observer.subscribe("audit.auth.login.failed", {
    callback: (_e, m) => void seen.push(fromBinary(AuditEventSchema, m.data)),
  });
  await observer.flush();

  const token = await login(gw.url, admin);
  const inactive = ed25519();
  const created = await call(gw.url, "POST", "/api/v1/operators", {
    token,
    body: { name: "dormant", public_key: inactive.publicKeyHex, role: "operator" },
  });
  t.equal(created.status, 201);
  // No API deactivates an operator; the row's flag is what the challenge reads.
  await auth.deps.pool.query("UPDATE operators SET active = false WHERE name = 'dormant'");
  const stranger = ed25519();
  for (const key of [stranger, inactive]) {
    const ch = await call(gw.url, "POST", "/api/v1/auth/challenge", { body: { public_key: key.publicKeyHex } });
    problemJson(t, ch, 401, "unknown_operator");
    t.notOk("nonce" in ch.body, "no nonce");
  }
  const stored = await auth.deps.pool.query("SELECT count(*)::int AS n FROM challenges WHERE public_key = ANY($1)", [
    [stranger.publicKeyHex, inactive.publicKeyHex],
  ]);
  t.equal(stored.rows[0].n, 0, "no nonce stored for a key nobody can use");

  const evs = await eventually(() => {
    const mine = seen.filter((e) =>
      [stranger.publicKeyHex, inactive.publicKeyHex].includes(String(e.metadata?.public_key)),
    );
    return mine.length === 2 ? mine : undefined;
  });
  for (const e of evs) {
    t.equal(e.severity, "info");
    t.ok(isUnnotified(e.metadata as Record<string, unknown>), "flagged: notify sends it nowhere");
    t.equal(e.metadata?.reason, "unknown_operator");
    t.equal(e.metadata?.known_operator, false);
    t.match(e.metadata?.remote_address, /\S/, "the caller's address is recorded");
  }

  // A verify for a key that never got a nonce fails on the signature or the nonce, never with a token.
  const nonce = "ab".repeat(32);
  const own = await call(gw.url, "POST", "/api/v1/auth/verify", {
    body: { public_key: stranger.publicKeyHex, nonce, signature: signNonce(nonce, stranger) },
  });
  problemJson(t, own, 401, "invalid_nonce");
});

t.test("operators CRUD; operator refused on admin routes; last admin protected", async (t) => {
  const token = await login(gw.url, admin);
  const bobKey = ed25519();
  const bob = await call(gw.url, "POST", "/api/v1/operators", {
    token,
    body: { name: "bob", public_key: bobKey.publicKeyHex },
  });
  t.equal(bob.status, 201);
  t.equal(bob.body.role, "operator");
  problemJson(
    t,
    await call(gw.url, "POST", "/api/v1/operators", {
      token,
      body: { name: "bob", public_key: ed25519().publicKeyHex },
    }),
    409,
    "operator_exists",
  );
  problemJson(
    t,
    await call(gw.url, "POST", "/api/v1/operators", { token, body: { name: "bob2", public_key: bobKey.publicKeyHex } }),
    409,
    "public_key_in_use",
  );
  problemJson(
    t,
    await call(gw.url, "POST", "/api/v1/operators", {
      token,
      body: { name: "Bad Name!", public_key: bobKey.publicKeyHex },
    }),
    400,
    "invalid_request",
  );

  const bobToken = await login(gw.url, bobKey);
  t.equal((await call(gw.url, "GET", "/api/v1/operators/bob", { token: bobToken })).body.id, bob.body.id);
  // Authorization is decided before the body is looked at: garbage body, still 403.
  problemJson(
    t,
    await call(gw.url, "POST", "/api/v1/operators", { token: bobToken, raw: "{broken" }),
    403,
    "admin_required",
  );
  problemJson(
    t,
    await call(gw.url, "DELETE", `/api/v1/operators/${bob.body.id}`, { token: bobToken }),
    403,
    "admin_required",
  );
  problemJson(t, await call(gw.url, "GET", "/api/v1/operators/nobody", { token }), 404, "operator_not_found");

  const me = await call(gw.url, "GET", "/api/v1/auth/whoami", { token });
  problemJson(t, await call(gw.url, "DELETE", `/api/v1/operators/${me.body.id}`, { token }), 409, "last_admin");
  t.equal((await call(gw.url, "DELETE", `/api/v1/operators/${bob.body.id}`, { token })).status, 204);
});

t.test("pagination walks every operator once", async (t) => {
  const token = await login(gw.url, admin);
  for (let i = 0; i < 7; i++)
    await call(gw.url, "POST", "/api/v1/operators", {
      token,
      body: { name: `pager-${i}`, public_key: ed25519().publicKeyHex },
    });
  const seen: string[] = [];
  let cursor = "";
  for (let guard = 0; guard < 20; guard++) {
    const page = await call(gw.url, "GET", `/api/v1/operators?limit=3${cursor ? `&cursor=${cursor}` : ""}`, { token });
    t.equal(page.status, 200);
    seen.push(...page.body.operators.map((o: { id: string }) => o.id));
    if (!page.body.has_more) break;
    cursor = page.body.next_cursor;
  }
  t.equal(new Set(seen).size, seen.length, "no repeats");
  const count = Number((await auth.deps.pool.query("SELECT count(*) FROM operators")).rows[0].count);
  t.equal(seen.length, count, "no gaps");
  problemJson(t, await call(gw.url, "GET", "/api/v1/operators?limit=0", { token }), 400, "invalid_request");
  problemJson(t, await call(gw.url, "GET", "/api/v1/operators?limit=501", { token }), 400, "invalid_request");
});

t.test("a removed operator's token stops working on every gateway: the revocation broadcast", async (t) => {
  const gw2 = await startGateway(nats, clock);
  t.teardown(() => gw2.stop());
  const token = await login(gw.url, admin);
  const key = ed25519();
  const carol = await call(gw.url, "POST", "/api/v1/operators", {
    token,
    body: { name: "carol", public_key: key.publicKeyHex },
  });
  const carolToken = await login(gw.url, key);
  // Warm both caches so the check below is about revocation, not a cache miss.
  t.equal((await call(gw.url, "GET", "/api/v1/operators", { token: carolToken })).status, 200);
  t.equal((await call(gw2.url, "GET", "/api/v1/operators", { token: carolToken })).status, 200);
  t.ok(gw.tokens.size() > 0 && gw2.tokens.size() > 0);
  t.equal((await call(gw.url, "DELETE", `/api/v1/operators/${carol.body.id}`, { token })).status, 204);
  // The caches' entries go stale only as the manual clock advances, and it stands still here: a 401
  // on both gateways can only come from the broadcast, however long it takes.
  await eventually(
    async () =>
      (await call(gw.url, "GET", "/api/v1/operators", { token: carolToken })).status === 401 &&
      (await call(gw2.url, "GET", "/api/v1/operators", { token: carolToken })).status === 401,
    2000,
    20,
  );
  t.pass("both gateways refuse the token");
});

t.test("logout revokes the token", async (t) => {
  const token = await login(gw.url, admin);
  t.equal((await call(gw.url, "POST", "/api/v1/auth/logout", { token })).status, 204);
  await eventually(async () => (await call(gw.url, "GET", "/api/v1/operators", { token })).status === 401, 2000, 20);
});

t.test("status reports services; unknown route is problem+json", async (t) => {
  const st = await call(gw.url, "GET", "/api/v1/status");
  t.equal(st.status, 200);
  t.same(st.body.services, { auth: "ok" });
  t.equal(st.body.api_version, "0.0.9");
  problemJson(t, await call(gw.url, "GET", "/api/v1/nope"), 404, "route_not_found");
});

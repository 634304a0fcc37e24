import t, { type Test } from "tap";
import { createTestDatabase, ed25519, startNats } from "@orch/kit/testing";
import { softAuthenticator } from "../../auth/test/soft-authenticator.js";
import { login, startAuth, startGateway } from "./harness.js";

// Passkeys through the real gateway and auth service with a software authenticator: the relying
// party comes from http.public_url (not the address the request arrived on), registration and
// sign-in round-trip, sign-in sets the console cookies, and admins see and remove others' passkeys.
const PUBLIC = "http://localhost:8123"; // the RP; requests go to the test listener, as behind a proxy
const nats = await startNats();
const db = await createTestDatabase();
const admin = ed25519();
const auth = await startAuth(nats, db, admin);
const gw = await startGateway(nats, undefined, {}, { http: { public_url: PUBLIC } });
const bare = await startGateway(nats);
const byIp = await startGateway(nats, undefined, {}, { http: { public_url: "http://127.0.0.1:8123" } });
t.teardown(async () => {
  await byIp.stop();
  await bare.stop();
  await gw.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});
const adminToken = await login(gw.url, admin);
const opKey = ed25519();

interface Res {
  status: number;
  body: any;
  cookies: string[];
}

async function req(
  base: string,
  method: string,
  path: string,
  o: { token?: string; cookie?: string; origin?: string; body?: unknown } = {},
): Promise<Res> {
  const headers: Record<string, string> = {};
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.cookie) headers.cookie = o.cookie;
  if (o.origin) headers.origin = o.origin;
  if (o.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(base + path, {
    method,
    headers,
    ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, cookies: res.headers.getSetCookie() };
}
const code = (t: Test, r: Res, status: number, c: string) => {
  t.equal(r.status, status, `${c}: status`);
  t.equal(r.body?.code, c);
};

t.test("no host-named public_url: passkeys_unavailable", async (t) => {
  for (const g of [bare, byIp]) {
    code(
      t,
      await req(g.url, "POST", "/api/v1/auth/passkeys/authentication-options", { body: {} }),
      409,
      "passkeys_unavailable",
    );
    code(
      t,
      await req(g.url, "POST", "/api/v1/auth/passkeys/registration-options", { token: adminToken, body: {} }),
      409,
      "passkeys_unavailable",
    );
  }
});

t.test("register, list, sign in with cookies, admin list and remove", async (t) => {
  const created = await req(gw.url, "POST", "/api/v1/operators", {
    token: adminToken,
    body: { name: "passkey-op", public_key: opKey.publicKeyHex },
  });
  t.equal(created.status, 201);
  const opId = created.body.id as string;
  const opToken = await login(gw.url, opKey);
  const authr = softAuthenticator(PUBLIC);

  const opts = await req(gw.url, "POST", "/api/v1/auth/passkeys/registration-options", { token: opToken, body: {} });
  t.equal(opts.status, 200);
  t.equal(opts.body.options.rp.id, "localhost", "RP ID from public_url");
  const reg = await req(gw.url, "POST", "/api/v1/auth/passkeys", {
    token: opToken,
    body: { name: "laptop", response: authr.create(opts.body.options) },
  });
  t.equal(reg.status, 201);
  t.match(reg.body, { name: "laptop", last_used_at: null, backed_up: false, transports: ["internal"] });
  t.ok(Date.parse(reg.body.created_at));
  code(
    t,
    await req(gw.url, "POST", "/api/v1/auth/passkeys", { token: opToken, body: { name: "", response: {} } }),
    400,
    "invalid_request",
  );

  const mine = await req(gw.url, "GET", "/api/v1/auth/passkeys", { token: opToken });
  t.same(
    mine.body.passkeys.map((p: { id: string }) => p.id),
    [reg.body.id],
  );
  const theirs = await req(gw.url, "GET", `/api/v1/operators/${opId}/passkeys`, { token: adminToken });
  t.equal(theirs.status, 200);
  t.same(
    theirs.body.passkeys.map((p: { id: string }) => p.id),
    [reg.body.id],
  );
  t.same((await req(gw.url, "GET", "/api/v1/auth/passkeys", { token: adminToken })).body.passkeys, [], "only mine");

  const login1 = await req(gw.url, "POST", "/api/v1/auth/passkeys/authentication-options", { body: {} });
  t.equal(login1.status, 200);
  const assertion = authr.get(login1.body.options);
  code(
    t,
    await req(gw.url, "POST", "/api/v1/auth/passkeys/authentication", { body: { response: assertion } }),
    403,
    "origin_not_allowed",
  );
  const login2 = await req(gw.url, "POST", "/api/v1/auth/passkeys/authentication-options", { body: {} });
  const signedIn = await req(gw.url, "POST", "/api/v1/auth/passkeys/authentication", {
    origin: PUBLIC,
    body: { response: authr.get(login2.body.options) },
  });
  t.equal(signedIn.status, 200);
  t.equal(signedIn.body.operator.id, opId);
  t.type(signedIn.body.csrf_token, "string");
  t.match(signedIn.cookies[0], /^orch_session=[^;]+; HttpOnly; SameSite=Strict; Path=\/; Max-Age=\d+$/);
  t.match(signedIn.cookies[1], `orch_csrf=${signedIn.body.csrf_token};`);
  const cookie = signedIn.cookies[0]!.split(";")[0]!;
  t.equal((await req(gw.url, "GET", "/api/v1/auth/whoami", { cookie })).body.name, "passkey-op");

  code(
    t,
    await req(gw.url, "DELETE", `/api/v1/auth/passkeys/${reg.body.id}`, { token: adminToken }),
    404,
    "passkey_not_found",
  );
  code(
    t,
    await req(gw.url, "GET", "/api/v1/operators/nobody/passkeys", { token: adminToken }),
    404,
    "operator_not_found",
  );
  t.equal(
    (await req(gw.url, "DELETE", `/api/v1/operators/${opId}/passkeys/${reg.body.id}`, { token: adminToken })).status,
    204,
  );
  code(
    t,
    await req(gw.url, "DELETE", `/api/v1/auth/passkeys/${reg.body.id}`, { token: opToken }),
    404,
    "passkey_not_found",
  );
  t.same((await req(gw.url, "GET", "/api/v1/auth/passkeys", { token: opToken })).body.passkeys, []);
});

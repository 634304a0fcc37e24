import t from "tap";
import { generateKeyPairSync, sign } from "node:crypto";
import { eventually, startOidcProvider } from "@orch/kit/testing";
import { loginHandlers } from "../src/handlers/login.js";
import { authClient, authTestbed, TEST_SSO_KEYS } from "./harness.js";
import { auditObserver, eventsOf, meta, putProvider, reasonOf, signIn, ssoClient } from "./sso-helpers.js";

// What happens to SSO sessions after sign-in: the device flow that opens CLI ones, the refresher
// that ends them when the provider says so (2 s interval), back-channel logout, and key login
// refused by auth.require_sso_for_roles.
const {
  nats,
  auth,
  admin: adminKey,
  addOperator,
} = await authTestbed(t, {
  auth: { sso_keys: TEST_SSO_KEYS, sso_unreachable_grace_seconds: 3 },
});
const op = await startOidcProvider();
t.teardown(() => op.stop());
const bus = await auditObserver(nats);
const client = await authClient(nats);
const sso = await ssoClient(nats);
const pool = auth.deps.pool;
const { actor: admin } = await addOperator("boss", "admin");
await putProvider(sso, op, admin, { name: "corp" });
await putProvider(sso, op, admin, { name: "fast", refreshIntervalSeconds: 2 });
const activeOf = async (id: string) =>
  (await pool.query("SELECT active FROM operators WHERE id = $1", [id])).rows[0]?.active;
const tokensOf = async (id: string) =>
  Number((await pool.query("SELECT count(*) AS n FROM tokens WHERE operator_id = $1", [id])).rows[0].n);

t.test("device flow: pending, then approved at the provider → a CLI session", async (t) => {
  op.setUser("gus", { email: "gus@example.com", groups: ["web"], preferredUsername: "gus" });
  const waiting = await sso.beginSsoDevice({ provider: "corp", remoteAddress: "" });
  const pending = await sso.pollSsoDevice({ deviceId: waiting.deviceId, remoteAddress: "" });
  t.match(pending, { status: "pending", interval: waiting.interval });

  const d = await sso.beginSsoDevice({ provider: "corp", remoteAddress: "192.0.2.4" });
  t.match(d, { userCode: /\S/, verificationUri: `${op.issuer}/device` });
  t.ok(d.expiresAt > Date.now());
  const stored = await pool.query("SELECT device_code FROM sso_devices");
  t.notOk(JSON.stringify(d).includes(stored.rows[0].device_code), "the device code stays on the server");
  await op.approveDeviceViaHttp(d.verificationUriComplete, "gus");
  const done = await sso.pollSsoDevice({ deviceId: d.deviceId, remoteAddress: "192.0.2.4" });
  t.equal(done.status, "complete");
  t.match(done.session, { client: "cli", provider: "corp", operator: { name: "gus", agentSelector: "role=web" } });
  t.equal((await client.authenticate({ token: done.session!.token })).operator?.name, "gus");
  t.equal(
    await reasonOf(sso.pollSsoDevice({ deviceId: d.deviceId, remoteAddress: "" })),
    "FAILED_PRECONDITION/sso_device_expired",
    "one session per device code",
  );
  t.equal(
    await reasonOf(sso.pollSsoDevice({ deviceId: "nope", remoteAddress: "" })),
    "FAILED_PRECONDITION/sso_device_expired",
  );
});

t.test("device flow unsupported by the provider", async (t) => {
  const doc = (await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  const { device_authorization_endpoint: _, ...noDevice } = doc;
  op.intercept = (req) => (req.path === "/.well-known/openid-configuration" ? { body: noDevice } : undefined);
  try {
    t.equal((await putProvider(sso, op, admin, { name: "nodev" })).deviceFlow, false);
    t.equal(
      await reasonOf(sso.beginSsoDevice({ provider: "nodev", remoteAddress: "" })),
      "FAILED_PRECONDITION/sso_device_unsupported",
    );
  } finally {
    op.intercept = undefined;
  }
});

t.test("refresher: a user disabled at the provider is deprovisioned within the interval", async (t) => {
  op.setUser("dan", { email: "dan@example.com", groups: ["web"], preferredUsername: "dan" });
  const s = await signIn(sso, op, "dan", { provider: "fast", client: "cli" });
  const id = s.operator!.id;
  const started = Date.now();
  op.disableUser("dan");
  await eventually(() => bus.revocations.find((r) => r.operatorId === id && !r.scopeChanged));
  t.ok(Date.now() - started < 6000, `revoked after ${Date.now() - started} ms`);
  t.equal(await activeOf(id), false);
  t.equal(await tokensOf(id), 0);
  const ev = await eventsOf(bus, "operator.deprovisioned", (m) => m.reason === "refresh_refused");
  t.match(meta(ev[0]!), { provider: "fast" });
  t.equal(await reasonOf(client.authenticate({ token: s.token })), "UNAUTHENTICATED/invalid_token");
  op.enableUser("dan");
  const again = await signIn(sso, op, "dan", { provider: "fast", client: "cli" });
  t.equal(again.operator?.id, id, "a new sign-in re-activates the same operator");
  t.equal(again.operator?.active, true);
});

t.test("refresher: changed groups change the scope; no group left ends access", async (t) => {
  op.setUser("eve", { email: "eve@example.com", groups: ["web"], preferredUsername: "eve" });
  const s = await signIn(sso, op, "eve", { provider: "fast", client: "cli" });
  const id = s.operator!.id;
  op.setGroups("eve", ["db"]);
  await eventually(() => bus.revocations.find((r) => r.operatorId === id && r.scopeChanged));
  const p = await client.authenticate({ token: s.token });
  t.match(
    p.operator,
    { agentSelector: "role=db", ssoRule: "db", active: true },
    "the session stays, with the new scope",
  );
  await eventsOf(
    bus,
    "operator.provisioned",
    (m) => m.agent_selector === "role=db" && m.old_agent_selector === "role=web",
  );
  op.setGroups("eve", ["sales"]);
  await eventually(() => bus.revocations.find((r) => r.operatorId === id && !r.scopeChanged));
  t.equal(await activeOf(id), false);
  await eventsOf(bus, "operator.deprovisioned", (m) => m.reason === "mapping_refused");
});

t.test("back-channel logout: valid ends the sessions, forged is refused", async (t) => {
  op.setUser("fay", { email: "fay@example.com", groups: ["web"], preferredUsername: "fay" });
  const s = await signIn(sso, op, "fay", { client: "cli" });
  const id = s.operator!.id;
  const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
  const forged: [string, string][] = [
    ["alg none", op.logoutToken({ sub: "fay" }, { alg: "none" })],
    ["another key", op.logoutToken({ sub: "fay" }, { key: other })],
    ["another audience", op.logoutToken({ sub: "fay", aud: "x" })],
    ["another issuer", op.logoutToken({ sub: "fay", iss: "https://evil.example" })],
    ["a nonce", op.logoutToken({ sub: "fay", nonce: "n" })],
    ["no event", op.logoutToken({ sub: "fay", events: {} })],
    ["no sub or sid", op.logoutToken({})],
    ["garbage", "not.a.jwt"],
  ];
  for (const [why, token] of forged) {
    t.equal(
      await reasonOf(sso.backchannelLogout({ provider: "corp", logoutToken: token })),
      "INVALID_ARGUMENT/invalid_logout_token",
      why,
    );
  }
  t.equal(await tokensOf(id), 1, "forged tokens ended nothing");
  const r = await sso.backchannelLogout({ provider: "corp", logoutToken: op.logoutToken({ sub: "fay" }) });
  t.equal(r.sessionsEnded, 1);
  await eventually(() => bus.revocations.find((x) => x.operatorId === id));
  t.equal(await tokensOf(id), 0);
  t.equal(await activeOf(id), true, "the operator may sign in again");
  await eventsOf(bus, "auth.sso.logout", (m) => m.provider === "corp" && m.sessions_ended === 1);
});

t.test("require_sso_for_roles refuses key login except for break-glass operators", async (t) => {
  const cfg = {
    ...auth.deps.config,
    auth: { ...auth.deps.config.auth, require_sso_for_roles: ["admin", "operator"] as ("admin" | "operator")[] },
  };
  const strict = loginHandlers({ ...auth.deps, config: cfg });
  const login = async (key: typeof adminKey) => {
    const ch = await strict.challenge(
      { $typeName: "orch.v1.ChallengeRequest", publicKey: key.publicKeyHex, remoteAddress: "" },
      {} as never,
    );
    const nonce = ch.nonce ?? "";
    const signature = sign(null, Buffer.from(nonce, "hex"), key.privateKey).toString("hex");
    return strict.verify(
      {
        $typeName: "orch.v1.VerifyRequest",
        publicKey: key.publicKeyHex,
        nonce,
        signature,
        remoteAddress: "",
      },
      {} as never,
    );
  };
  const { key } = await addOperator("kim");
  t.equal(await reasonOf(login(key)), "PERMISSION_DENIED/sso_required");
  t.equal(await reasonOf(login(adminKey)), "ok", "the bootstrap admin (`admin`) is break-glass");
});

t.test("provider down past the grace period: sessions end", async (t) => {
  op.setUser("hal", { email: "hal@example.com", groups: ["web"], preferredUsername: "hal" });
  const s = await signIn(sso, op, "hal", { provider: "fast", client: "cli" });
  const id = s.operator!.id;
  await op.down();
  try {
    await eventually(() => bus.revocations.find((r) => r.operatorId === id), 20_000);
    await eventsOf(bus, "operator.deprovisioned", (m) => m.reason === "provider_unreachable");
    t.equal(await activeOf(id), false);
  } finally {
    await op.up();
  }
});

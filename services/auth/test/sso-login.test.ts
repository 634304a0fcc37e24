import t, { type Test } from "tap";
import { generateKeyPairSync } from "node:crypto";
import type { Actor } from "@orch/kit";
import { startOidcProvider } from "@orch/kit/testing";
import { ssoService } from "../src/sso/index.js";
import { authClient, authTestbed, TEST_SSO_KEYS } from "./harness.js";
import { auditObserver, authorize, eventsOf, meta, putProvider, reasonOf, signIn, ssoClient } from "./sso-helpers.js";

// Single sign-on through a real OpenID Provider (oidc-provider on loopback): providers, the
// authorization code flow end to end, and every bad input refused with its code, an audit event
// and no operator created.
const { nats, auth, addOperator } = await authTestbed(t, { auth: { sso_keys: TEST_SSO_KEYS } });
const op = await startOidcProvider({
  redirectUris: ["https://orch.example/api/v1/auth/sso/callback", "https://orch.example/cb"],
});
t.teardown(() => op.stop());
const bus = await auditObserver(nats);
const client = await authClient(nats);
const sso = await ssoClient(nats);
const pool = auth.deps.pool;
const { actor: admin } = await addOperator("boss", "admin");
const { actor: plain } = await addOperator("pat");
const operatorCount = async () => Number((await pool.query("SELECT count(*) AS n FROM operators")).rows[0].n);

op.setUser("ann", { email: "ann@example.com", groups: ["web"], preferredUsername: "ann" });
op.setUser("root", { email: "root@example.com", groups: ["ops-admin"], preferredUsername: "root" });
op.setUser("bob", { email: "bob@example.com", groups: ["web"], preferredUsername: "bob" });
op.setUser("sal", { email: "sal@example.com", groups: ["sales"] });
op.setUser("weird", { email: "w@example.com", extraClaims: { groups: "ops-admin" } });

t.test("providers: put, get, list; the client secret is sealed and never returned", async (t) => {
  const p = await putProvider(sso, op, admin);
  t.equal(p.hasClientSecret, true);
  t.equal(p.deviceFlow, true, "discovered device_authorization_endpoint");
  t.same(p.scopes, ["openid", "email", "profile"]);
  t.notOk(JSON.stringify(p).includes(op.clientSecret), "not in the answer");
  const stored = await pool.query("SELECT client_secret FROM identity_providers WHERE name = 'corp'");
  t.notOk(Buffer.from(stored.rows[0].client_secret).includes(op.clientSecret), "sealed at rest");
  t.equal((await sso.getIdentityProvider({ name: "corp" }, { actor: admin })).issuer, op.issuer);
  t.same(
    (await sso.listIdentityProviders({}, { actor: admin })).providers.map((x) => x.name),
    ["corp"],
  );
  t.same((await sso.listSignInProviders({})).providers, [
    { $typeName: "orch.v1.SignInProvider", name: "corp", displayName: "Corp SSO", deviceFlow: true },
  ]);
  const created = await eventsOf(bus, "identity_provider.created");
  t.equal(meta(created[0]!).client_secret, "set");
  // An update without a secret keeps it.
  const again = await sso.putIdentityProvider(
    { name: "corp", displayName: "Corp SSO", issuer: op.issuer, clientId: op.clientId, rules: p.rules, enabled: true },
    { actor: admin },
  );
  t.equal(again.hasClientSecret, true);
  t.equal(meta((await eventsOf(bus, "identity_provider.updated"))[0]!).client_secret, "kept");
  t.notOk(JSON.stringify(bus.events).includes(op.clientSecret), "in no event");
});

t.test("providers: admin only, bad issuers refused", async (t) => {
  t.equal(await reasonOf(putProvider(sso, op, plain, { name: "x" })), "PERMISSION_DENIED/admin_required");
  t.equal(await reasonOf(sso.listIdentityProviders({}, { actor: plain })), "PERMISSION_DENIED/admin_required");
  t.equal(
    await reasonOf(putProvider(sso, op, admin, { name: "x", issuer: "http://example.com" })),
    "INVALID_ARGUMENT/invalid_request",
    "plain http off loopback",
  );
  t.equal(
    await reasonOf(putProvider(sso, op, admin, { name: "x", issuer: "http://127.0.0.1:1" })),
    "INVALID_ARGUMENT/issuer_discovery_failed",
    "nothing answers",
  );
  const doc = (await (await fetch(`${op.issuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
  op.intercept = (req) =>
    req.path === "/.well-known/openid-configuration" ? { body: { ...doc, issuer: "https://evil.example" } } : undefined;
  try {
    t.equal(
      await reasonOf(putProvider(sso, op, admin, { name: "x" })),
      "INVALID_ARGUMENT/issuer_discovery_failed",
      "discovery names another issuer",
    );
  } finally {
    op.intercept = undefined;
  }
  const bad = { name: "x", issuer: op.issuer, clientId: op.clientId, enabled: true };
  for (const rules of [[{ role: "root" }], [{ role: "operator", agentSelector: "role=(" }]]) {
    t.equal(
      await reasonOf(sso.putIdentityProvider({ ...bad, rules }, { actor: admin })),
      "INVALID_ARGUMENT/invalid_request".replace(
        "invalid_request",
        rules[0]!.role === "root" ? "invalid_request" : "invalid_selector",
      ),
    );
  }
  t.equal((await sso.listIdentityProviders({}, { actor: admin })).providers.length, 1, "nothing stored");
  const off = ssoService({
    ...auth.deps,
    config: { ...auth.deps.config, auth: { ...auth.deps.config.auth, sso_keys: "" } },
  });
  const ctx = { requestId: "r", actor: admin, deadline: Date.now() + 10_000, log: auth.deps.log };
  const req = { $typeName: "orch.v1.PutIdentityProviderRequest", name: "y", issuer: op.issuer } as never;
  t.equal(await reasonOf(off.handlers.putIdentityProvider(req, ctx)), "FAILED_PRECONDITION/sso_unavailable");
});

t.test("code flow: the operator is provisioned with the mapped role and scope", async (t) => {
  const s = await signIn(sso, op, "ann");
  t.equal(s.client, "console");
  t.equal(s.returnTo, "/agents");
  t.match(s.operator, { name: "ann", role: "operator", agentSelector: "role=web", source: "sso:corp", ssoRule: "web" });
  t.equal(s.operator?.publicKey, "", "no key");
  const p = await client.authenticate({ token: s.token });
  t.match(p.operator, { id: s.operator?.id, agentSelector: "role=web", source: "sso:corp" });
  const row = await pool.query("SELECT kind, via FROM tokens WHERE operator_id = $1", [s.operator?.id]);
  t.same(row.rows, [{ kind: "console", via: "sso" }]);
  const ident = await pool.query("SELECT subject, refresh_token IS NOT NULL AS rt, groups FROM sso_identities");
  t.same(ident.rows, [{ subject: "ann", rt: true, groups: ["web"] }], "refresh token kept (sealed)");
  const prov = await eventsOf(bus, "operator.provisioned", (m) => m.provider === "corp");
  t.match(meta(prov[0]!), { rule: "web", role: "operator", agent_selector: "role=web", created: true });
  const ok = await eventsOf(bus, "auth.sso.login_succeeded");
  t.match(meta(ok[0]!), { provider: "corp", client: "console", rule: "web", remote_address: "192.0.2.9" });

  const cli = await signIn(sso, op, "ann", { client: "cli" });
  t.equal(cli.operator?.id, s.operator?.id, "the same identity, the same operator");
  t.equal(cli.returnTo, "");
  const kinds = await pool.query("SELECT kind FROM tokens WHERE operator_id = $1 ORDER BY kind", [s.operator?.id]);
  t.same(
    kinds.rows.map((r) => r.kind),
    ["api", "console"],
  );
});

t.test("admins map unscoped; a key operator's name is never taken over", async (t) => {
  const root = await signIn(sso, op, "root");
  t.match(root.operator, { name: "root", role: "admin", agentSelector: "" });
  const { op: keyBob } = await addOperator("bob");
  const s = await signIn(sso, op, "bob");
  t.equal(s.operator?.name, "bob-2");
  t.not(s.operator?.id, keyBob.id);
  const still = await pool.query("SELECT public_key FROM operators WHERE id = $1", [keyBob.id]);
  t.equal(still.rows[0].public_key, keyBob.publicKey);
});

t.test("a deprovisioned operator is re-activated by a sign-in that maps", async (t) => {
  await pool.query("UPDATE operators SET active = false WHERE name = 'ann'");
  const s = await signIn(sso, op, "ann");
  t.equal(s.operator?.active, true);
});

async function refused(t: Test, p: Promise<unknown>, reason: string, code = reason) {
  const before = await operatorCount();
  const got = await reasonOf(p);
  t.match(got, new RegExp(`/${reason}$`), reason);
  t.equal(await operatorCount(), before, "no operator created");
  await eventsOf(bus, "auth.sso.login_failed", (m) => m.code === code && m.provider !== undefined);
}

t.test("state: single use, unknown refused", async (t) => {
  const { back } = await authorize(sso, op, "ann");
  await sso.finishSsoLogin({ callbackUrl: back, remoteAddress: "" });
  await refused(t, sso.finishSsoLogin({ callbackUrl: back, remoteAddress: "" }), "sso_state_invalid");
  const forged = new URL(back);
  forged.searchParams.set("state", "not-a-state");
  await refused(t, sso.finishSsoLogin({ callbackUrl: forged.href, remoteAddress: "" }), "sso_state_invalid");
});

t.test(
  "state bound to the browser: a redirect finished without the beginning browser's cookie is refused, and spent",
  async (t) => {
    const { begun, back } = await authorize(sso, op, "ann");
    const elsewhere = { callbackUrl: back, remoteAddress: "", bindBrowser: true };
    await refused(t, sso.finishSsoLogin({ ...elsewhere, browserState: "" }), "sso_state_invalid");
    const again = await authorize(sso, op, "ann");
    await refused(
      t,
      sso.finishSsoLogin({ ...elsewhere, callbackUrl: again.back, browserState: begun.state }),
      "sso_state_invalid",
    );
    // The right browser cannot finish a redirect that was shown to another one: it was spent.
    await refused(
      t,
      sso.finishSsoLogin({ ...elsewhere, callbackUrl: again.back, browserState: again.begun.state }),
      "sso_state_invalid",
    );
    const third = await authorize(sso, op, "ann");
    const ok = await sso.finishSsoLogin({ ...elsewhere, callbackUrl: third.back, browserState: third.begun.state });
    t.match(ok, { client: "console", operator: { name: "ann" } }, "the browser that began it finishes it");
  },
);

t.test("a code replayed under a new state is refused by the provider", async (t) => {
  const first = await authorize(sso, op, "ann");
  await sso.finishSsoLogin({ callbackUrl: first.back, remoteAddress: "" });
  const second = await sso.beginSsoLogin({
    provider: "corp",
    redirectUri: "https://orch.example/api/v1/auth/sso/callback",
    client: "console",
    returnTo: "",
    remoteAddress: "",
  });
  const replay = new URL(first.back);
  replay.searchParams.set("state", second.state);
  await refused(t, sso.finishSsoLogin({ callbackUrl: replay.href, remoteAddress: "" }), "sso_code_invalid");
});

t.test("the provider's error redirect is refused", async (t) => {
  const begun = await sso.beginSsoLogin({
    provider: "corp",
    redirectUri: "https://orch.example/cb",
    client: "console",
    returnTo: "",
    remoteAddress: "",
  });
  const url = `https://orch.example/cb?error=access_denied&state=${begun.state}`;
  await refused(t, sso.finishSsoLogin({ callbackUrl: url, remoteAddress: "" }), "sso_login_refused");
});

t.test("forged ID tokens are refused", async (t) => {
  const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
  const cases: [string, (nonce: string) => string][] = [
    ["alg none", (nonce) => op.mintIdToken({ sub: "mallory", nonce, groups: ["ops-admin"] }, { alg: "none" })],
    ["another key", (nonce) => op.mintIdToken({ sub: "mallory", nonce, groups: ["ops-admin"] }, { key: other })],
    ["another audience", (nonce) => op.mintIdToken({ sub: "mallory", nonce, aud: "someone-else", groups: [] })],
    ["another issuer", (nonce) => op.mintIdToken({ sub: "mallory", nonce, iss: "https://evil.example", groups: [] })],
    ["expired", (nonce) => op.mintIdToken({ sub: "mallory", nonce, iat: 1000, exp: 2000, groups: [] })],
    ["nonce mismatch", () => op.mintIdToken({ sub: "mallory", nonce: "another", groups: ["ops-admin"] })],
    [
      "tampered",
      (nonce) => {
        const [h, , s] = op.mintIdToken({ sub: "ann", nonce, groups: ["web"] }).split(".");
        const body = Buffer.from(
          JSON.stringify({
            iss: op.issuer,
            aud: op.clientId,
            sub: "mallory",
            nonce,
            groups: ["ops-admin"],
            iat: Math.floor(Date.now() / 1000),
            exp: Math.floor(Date.now() / 1000) + 300,
          }),
        ).toString("base64url");
        return `${h}.${body}.${s}`;
      },
    ],
  ];
  for (const [name, forge] of cases) {
    const { back, nonce } = await authorize(sso, op, "ann");
    const idToken = forge(nonce);
    op.intercept = (req) =>
      req.method === "POST" && req.path === "/token"
        ? { body: { access_token: "at", token_type: "Bearer", expires_in: 300, id_token: idToken } }
        : undefined;
    try {
      await refused(t, sso.finishSsoLogin({ callbackUrl: back, remoteAddress: "" }), "sso_token_invalid");
    } finally {
      op.intercept = undefined;
    }
    t.equal((await pool.query("SELECT 1 FROM sso_identities WHERE subject = 'mallory'")).rowCount, 0, name);
  }
});

t.test("a provider that is down", async (t) => {
  const { back } = await authorize(sso, op, "ann");
  await op.down();
  try {
    await refused(t, sso.finishSsoLogin({ callbackUrl: back, remoteAddress: "" }), "sso_provider_unreachable");
  } finally {
    await op.up();
  }
});

t.test("claims of unexpected types; claims no rule maps", async (t) => {
  const { back } = await authorize(sso, op, "weird");
  await refused(t, sso.finishSsoLogin({ callbackUrl: back, remoteAddress: "" }), "sso_claims_invalid");
  const before = await operatorCount();
  const sal = await authorize(sso, op, "sal");
  t.equal(
    await reasonOf(sso.finishSsoLogin({ callbackUrl: sal.back, remoteAddress: "" })),
    "PERMISSION_DENIED/sso_mapping_refused",
  );
  t.equal(await operatorCount(), before, "no operator created");
  const ev = await eventsOf(bus, "auth.sso.mapping_refused");
  t.match(meta(ev[0]!), { provider: "corp", subject: "sal", reason: /no mapping rule/ });
});

t.test("begin: unknown or disabled providers, a CLI redirect off loopback", async (t) => {
  const begin = (provider: string, client = "console", redirectUri = "https://orch.example/cb") =>
    sso.beginSsoLogin({ provider, redirectUri, client, returnTo: "", remoteAddress: "" });
  t.equal(await reasonOf(begin("nope")), "NOT_FOUND/identity_provider_not_found");
  await putProvider(sso, op, admin, { name: "off", enabled: false });
  t.equal(await reasonOf(begin("off")), "FAILED_PRECONDITION/sso_provider_disabled");
  t.equal(await reasonOf(begin("corp", "cli", "http://evil.example:8000/cb")), "INVALID_ARGUMENT/invalid_request");
  t.equal(await reasonOf(begin("corp", "cli", "http://localhost:8000/cb")), "INVALID_ARGUMENT/invalid_request");
  t.equal(await reasonOf(begin("corp", "cli", "http://127.0.0.1:8000/cb")), "ok");
  t.equal(
    await reasonOf(
      sso.beginSsoLogin({
        provider: "corp",
        redirectUri: "https://o/cb",
        client: "console",
        returnTo: "https://evil/",
        remoteAddress: "",
      }),
    ),
    "INVALID_ARGUMENT/invalid_request",
    "return_to is a path",
  );
});

t.test("TestSsoMapping", async (t) => {
  const r = await sso.testSsoMapping(
    { provider: "corp", claimsJson: JSON.stringify({ sub: "zed", groups: ["db"], email: "ann@x.io" }) },
    { actor: admin },
  );
  t.match(r, {
    matched: true,
    ruleIndex: 2,
    ruleName: "db",
    role: "operator",
    agentSelector: "role=db",
    operatorName: "ann-2",
  });
  const none = await sso.testSsoMapping(
    { provider: "corp", claimsJson: JSON.stringify({ sub: "zed", groups: 3 }) },
    { actor: admin },
  );
  t.match(none, { matched: false, reason: /groups/ });
});

t.test("delete deprovisions the provider's operators", async (t) => {
  const actorOf = (o: { id: string; name: string }): Actor => ({
    id: o.id,
    name: o.name,
    type: "operator",
    role: "operator",
  });
  void actorOf;
  const r = await sso.deleteIdentityProvider({ name: "corp" }, { actor: admin });
  t.ok(r.deprovisioned >= 3);
  const active = await pool.query("SELECT count(*) AS n FROM operators WHERE created_by = 'sso:corp' AND active");
  t.equal(Number(active.rows[0].n), 0);
  await eventsOf(bus, "operator.deprovisioned", (m) => m.reason === "provider_deleted");
  await eventsOf(bus, "identity_provider.deleted");
});

import { generateKeyPairSync } from "node:crypto";
import t from "tap";
import { OrchError } from "@orch/kit";
import { eventually } from "@orch/kit/testing";
import { hashToken } from "../src/handlers/login.js";
import { authClient, authTestbed, busObserver } from "./harness.js";
import { softAuthenticator } from "./soft-authenticator.js";

// Passkeys over the bus, as the gateway calls them. The refusals, then the whole path with a
// software authenticator: register → sign in → the session authenticates → removing the passkey
// revokes that session (and only it).
const { nats, auth, addOperator } = await authTestbed(t);
const bus = await busObserver(nats);
const client = await authClient(nats);
const pool = auth.deps.pool;
const RP = { rpId: "localhost", origin: "http://localhost:8080" };

const reasonOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof OrchError) return `${err.code}/${err.reason}`;
    throw err;
  }
  return "ok";
};

const ivan = await addOperator("ivan");
const judy = await addOperator("judy");

t.test("without a relying party every ceremony answers passkeys_unavailable", async (t) => {
  const none = { rpId: "", origin: "" };
  const unavailable = "FAILED_PRECONDITION/passkeys_unavailable";
  const as = { actor: ivan.actor };
  t.equal(await reasonOf(client.beginPasskeyRegistration({ ...none, operatorId: ivan.op.id }, as)), unavailable);
  t.equal(
    await reasonOf(
      client.finishPasskeyRegistration({ ...none, operatorId: ivan.op.id, name: "k", responseJson: "{}" }, as),
    ),
    unavailable,
  );
  t.equal(await reasonOf(client.beginPasskeyLogin(none)), unavailable);
  t.equal(await reasonOf(client.finishPasskeyLogin({ ...none, responseJson: "{}", remoteAddress: "" })), unavailable);
  t.equal((await pool.query("SELECT 1 FROM webauthn_challenges")).rowCount, 0, "no challenge stored");
});

t.test("garbage responses are invalid_passkey_response", async (t) => {
  for (const responseJson of ["not json", "[]", '{"id":"abc"}', '{"id":"abc","response":{"clientDataJSON":"!!"}}']) {
    t.equal(
      await reasonOf(client.finishPasskeyLogin({ ...RP, responseJson, remoteAddress: "" })),
      "INVALID_ARGUMENT/invalid_passkey_response",
      responseJson,
    );
  }
});

t.test("refusals: unknown challenge, unknown credential, bad name, another operator", async (t) => {
  const auth1 = softAuthenticator(RP.origin);
  const reg = auth1.create({ challenge: "bm90LWEtY2hhbGxlbmdl", rp: { id: RP.rpId }, user: { id: "dXNlcg" } });
  t.equal(
    await reasonOf(
      client.finishPasskeyRegistration(
        { ...RP, operatorId: ivan.op.id, name: "laptop", responseJson: JSON.stringify(reg) },
        { actor: ivan.actor },
      ),
    ),
    "UNAUTHENTICATED/invalid_webauthn_challenge",
  );
  const login = JSON.parse((await client.beginPasskeyLogin(RP)).optionsJson) as { challenge: string };
  t.equal(
    await reasonOf(
      client.finishPasskeyLogin({ ...RP, responseJson: JSON.stringify(auth1.get(login)), remoteAddress: "" }),
    ),
    "UNAUTHENTICATED/invalid_passkey",
    "a credential nobody registered",
  );
  t.equal(
    (await pool.query("SELECT 1 FROM webauthn_challenges WHERE challenge = $1", [login.challenge])).rowCount,
    0,
    "the challenge is spent even so",
  );
  t.equal(
    await reasonOf(
      client.finishPasskeyRegistration(
        { ...RP, operatorId: ivan.op.id, name: " ", responseJson: JSON.stringify(reg) },
        { actor: ivan.actor },
      ),
    ),
    "INVALID_ARGUMENT/invalid_request",
    "blank name",
  );
  t.equal(
    await reasonOf(client.beginPasskeyRegistration({ ...RP, operatorId: ivan.op.id }, { actor: judy.actor })),
    "PERMISSION_DENIED/permission_denied",
    "nobody registers a passkey for someone else",
  );
  t.equal(
    await reasonOf(client.listPasskeys({ operatorId: "nobody" }, { actor: ivan.actor })),
    "NOT_FOUND/operator_not_found",
  );
});

t.test("register → sign in → remove revokes the passkey's session", async (t) => {
  const authr = softAuthenticator(RP.origin);
  const as = { actor: ivan.actor };
  const optionsJson = (await client.beginPasskeyRegistration({ ...RP, operatorId: ivan.op.id }, as)).optionsJson;
  const options = JSON.parse(optionsJson) as {
    challenge: string;
    rp: { id: string; name: string };
    user: { id: string; name: string };
    authenticatorSelection: { residentKey: string };
    attestation: string;
  };
  t.equal(options.rp.name, "orch");
  t.equal(options.user.name, "ivan");
  t.equal(Buffer.from(options.user.id, "base64url").toString(), ivan.op.id, "user handle = operator id");
  t.equal(options.authenticatorSelection.residentKey, "required");
  t.equal(options.attestation, "none");
  const reg = JSON.stringify(authr.create(options));

  // A challenge is bound to its operator: judy cannot finish ivan's ceremony (and spends it).
  const stolen = await reasonOf(
    client.finishPasskeyRegistration(
      { ...RP, operatorId: judy.op.id, name: "x", responseJson: reg },
      { actor: judy.actor },
    ),
  );
  t.equal(stolen, "UNAUTHENTICATED/invalid_webauthn_challenge");
  const again = JSON.parse(
    (await client.beginPasskeyRegistration({ ...RP, operatorId: ivan.op.id }, as)).optionsJson,
  ) as typeof options;
  const wrongOrigin = softAuthenticator("http://evil.example");
  t.equal(
    await reasonOf(
      client.finishPasskeyRegistration(
        { ...RP, operatorId: ivan.op.id, name: "x", responseJson: JSON.stringify(wrongOrigin.create(again)) },
        as,
      ),
    ),
    "INVALID_ARGUMENT/invalid_passkey_response",
    "a response for another origin does not verify",
  );

  const third = JSON.parse(
    (await client.beginPasskeyRegistration({ ...RP, operatorId: ivan.op.id }, as)).optionsJson,
  ) as typeof options;
  const pk = await client.finishPasskeyRegistration(
    { ...RP, operatorId: ivan.op.id, name: "Laptop", responseJson: JSON.stringify(authr.create(third)) },
    as,
  );
  t.equal(pk.name, "Laptop");
  t.equal(pk.operatorId, ivan.op.id);
  t.same(pk.transports, ["internal"]);
  t.equal(pk.lastUsedAt, undefined);

  // The same authenticator again: excluded in the options, refused if it answers anyway.
  const fourth = JSON.parse(
    (await client.beginPasskeyRegistration({ ...RP, operatorId: ivan.op.id }, as)).optionsJson,
  ) as typeof options & { excludeCredentials: { id: string }[] };
  t.equal(fourth.excludeCredentials.length, 1);
  const dupe = authr.create(fourth, authr.credentials[1]!.id);
  t.equal(
    await reasonOf(
      client.finishPasskeyRegistration(
        { ...RP, operatorId: ivan.op.id, name: "Again", responseJson: JSON.stringify(dupe) },
        as,
      ),
    ),
    "ALREADY_EXISTS/passkey_exists",
  );

  const signIn = async (cred = authr.credentials[1]) => {
    const o = JSON.parse((await client.beginPasskeyLogin(RP)).optionsJson) as {
      challenge: string;
      allowCredentials?: unknown[];
    };
    t.same(o.allowCredentials ?? [], [], "discoverable: no credentials named");
    const responseJson = JSON.stringify(authr.get(o, cred));
    return { responseJson, v: await client.finishPasskeyLogin({ ...RP, responseJson, remoteAddress: "198.51.100.4" }) };
  };
  const { v, responseJson } = await signIn();
  t.equal(v.operator?.name, "ivan");
  t.equal((await client.authenticate({ token: v.token })).operator?.id, ivan.op.id);
  const tok = await pool.query("SELECT kind, via, passkey_id FROM tokens WHERE hash = $1", [hashToken(v.token)]);
  t.same(tok.rows, [{ kind: "console", via: "passkey", passkey_id: pk.id }]);
  t.equal(
    await reasonOf(client.finishPasskeyLogin({ ...RP, responseJson, remoteAddress: "" })),
    "UNAUTHENTICATED/invalid_webauthn_challenge",
    "an assertion cannot be replayed",
  );
  const listed = await client.listPasskeys({ operatorId: "ivan" }, as);
  t.equal(listed.passkeys.length, 1);
  t.ok(listed.passkeys[0]!.lastUsedAt, "last use recorded");
  t.equal((await pool.query("SELECT counter FROM passkeys")).rows[0].counter, 1, "counter stored");

  // A key-login token of the same operator survives the removal; the passkey's session does not.
  const second = (await signIn()).v;
  const lc = await client.createLoginCode({}, as);
  const other = await client.exchangeLoginCode({ code: lc.code, remoteAddress: "" });

  t.equal(
    await reasonOf(client.removePasskey({ operatorId: judy.op.id, passkeyId: pk.id }, { actor: judy.actor })),
    "NOT_FOUND/passkey_not_found",
    "another operator's passkey is not found",
  );
  t.equal(
    await reasonOf(client.removePasskey({ operatorId: ivan.op.id, passkeyId: pk.id }, { actor: judy.actor })),
    "PERMISSION_DENIED/permission_denied",
    "an operator cannot remove someone else's passkey",
  );
  const before = bus.revocations.length;
  await client.removePasskey({ operatorId: ivan.op.id, passkeyId: pk.id }, as);
  for (const tokn of [v.token, second.token]) {
    t.equal(await reasonOf(client.authenticate({ token: tokn })), "UNAUTHENTICATED/invalid_token");
  }
  t.equal((await client.authenticate({ token: other.token })).operator?.id, ivan.op.id, "other sessions stay");
  const revoked = await eventually(() => {
    const r = bus.revocations.slice(before);
    return r.length >= 2 ? r : undefined;
  });
  t.same(
    revoked.map((r) => r.tokenHash).sort(),
    [hashToken(v.token), hashToken(second.token)].sort(),
    "one revocation per session the passkey opened",
  );
  t.ok(revoked.every((r) => r.tokenOperatorId === ivan.op.id && r.operatorId === ""));
  t.equal(await reasonOf(signIn()), "UNAUTHENTICATED/invalid_passkey", "the removed passkey no longer signs in");

  const types = await eventually(() => {
    const evs = bus.events.map((e) => e.eventType);
    return evs.includes("auth.passkey.removed") ? evs : undefined;
  });
  t.ok(types.includes("auth.passkey.registered"));
  const succeeded = bus.events.filter(
    (e) => e.eventType === "auth.login.succeeded" && (e.metadata as Record<string, unknown>).method === "passkey",
  );
  t.equal(succeeded.length, 2);
});

t.test("a removed passkey no longer signs in; an inactive operator's passkey is refused", async (t) => {
  const authr = softAuthenticator(RP.origin);
  const as = { actor: judy.actor };
  const reg = async (name: string) => {
    const o = JSON.parse((await client.beginPasskeyRegistration({ ...RP, operatorId: judy.op.id }, as)).optionsJson);
    return client.finishPasskeyRegistration(
      { ...RP, operatorId: judy.op.id, name, responseJson: JSON.stringify(authr.create(o)) },
      as,
    );
  };
  const a = await reg("A");
  await reg("B");
  const login = async (i: number) => {
    const o = JSON.parse((await client.beginPasskeyLogin(RP)).optionsJson);
    return client.finishPasskeyLogin({
      ...RP,
      responseJson: JSON.stringify(authr.get(o, authr.credentials[i])),
      remoteAddress: "",
    });
  };
  await client.removePasskey(
    { operatorId: "judy", passkeyId: a.id },
    { actor: { id: "system", name: "system", type: "system", role: "" } },
  );
  t.equal(await reasonOf(login(0)), "UNAUTHENTICATED/invalid_passkey");
  t.equal((await login(1)).operator?.name, "judy");
  await pool.query("UPDATE operators SET active = false WHERE id = $1", [judy.op.id]);
  t.equal(await reasonOf(login(1)), "UNAUTHENTICATED/unknown_operator");
  await pool.query("UPDATE operators SET active = true WHERE id = $1", [judy.op.id]);

  // A signature made with another key does not verify.
  const o = JSON.parse((await client.beginPasskeyLogin(RP)).optionsJson);
  const forged = authr.get(o, {
    ...authr.credentials[1]!,
    privateKey: generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey,
  });
  t.equal(
    await reasonOf(client.finishPasskeyLogin({ ...RP, responseJson: JSON.stringify(forged), remoteAddress: "" })),
    "UNAUTHENTICATED/invalid_passkey",
  );
  // Presence without user verification (a security key with no PIN) is not a sign-in.
  const o2 = JSON.parse((await client.beginPasskeyLogin(RP)).optionsJson);
  t.equal(o2.userVerification, "required");
  const unverified = authr.get(o2, authr.credentials[1], { userVerified: false });
  t.equal(
    await reasonOf(client.finishPasskeyLogin({ ...RP, responseJson: JSON.stringify(unverified), remoteAddress: "" })),
    "UNAUTHENTICATED/invalid_passkey",
  );
  const failed = bus.events.filter(
    (e) => e.eventType === "auth.login.failed" && (e.metadata as Record<string, unknown>).method === "passkey",
  );
  t.ok(failed.length >= 4, "passkey failures are recorded");
});

import t from "tap";
import { sign } from "node:crypto";
import { createTestDatabase, ed25519, eventually, startNats, startSystem, type KeyPair } from "@orch/kit/testing";
import { startReceiver } from "../../services/notify/test/harness.js";

// Login failures (README.md, "Operators and login") with the real auth, audit, notify and gateway
// processes and a real HTTP receiver behind a webhook channel that asks for every severity.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const rx = await startReceiver();
t.teardown(() => rx.close());
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "audit", "gateway", "notify"],
  env: { ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS: "true", ORCH_NOTIFY_POLL_MS: "100", ORCH_NOTIFY_OPERATORS_CACHE_MS: "0" },
});

const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, path, { token, ...(body !== undefined ? { body } : {}) });
const challenge = (key: KeyPair | string) => {
  const body = { public_key: typeof key === "string" ? key : key.publicKeyHex };
  return system.api("POST", "/api/v1/auth/challenge", { body });
};
/** A verify whose signature is made with the wrong key: what an attacker without the private key can send. */
const badVerify = async (pub: string) => {
  const ch = await challenge(pub);
  const signature = sign(null, Buffer.from(ch.body.nonce, "hex"), ed25519().privateKey).toString("hex");
  return system.api("POST", "/api/v1/auth/verify", { body: { public_key: pub, nonce: ch.body.nonce, signature } });
};
type Notification = { event_type: string; summary: string };
type Failure = { severity: string; target: { id: string; name: string }; metadata: Record<string, unknown> };
const failures = async () =>
  (await api("GET", "/api/v1/audit?event_type=auth.login.failed&limit=200")).body.events as Failure[];
const loginFailedNotifications = async () =>
  ((await api("GET", "/api/v1/notifications?limit=200")).body.notifications as Notification[]).filter(
    (n) => n.event_type === "auth.login.failed",
  );

const bobKey = ed25519();
const bob = await api("POST", "/api/v1/operators", { name: "bob", public_key: bobKey.publicKeyHex });
// Asks for everything, info included: severity alone must not be what keeps unknown keys out.
const channel = await api("POST", "/api/v1/channels", {
  name: "all",
  channel_type: "webhook",
  config: { url: `${rx.url}/all`, min_severity: "info", event_types: ["auth.login.failed"] },
});

t.test("an operator's key gets a nonce, an unknown key a 401; a wrong signature is invalid_signature", async (t) => {
  t.equal(bob.status, 201);
  t.equal((await challenge(bobKey)).status, 200);
  const unknown = await challenge(ed25519());
  t.equal(unknown.status, 401);
  t.equal(unknown.body.code, "unknown_operator");

  const vKnown = await badVerify(bobKey.publicKeyHex);
  t.equal(vKnown.status, 401);
  t.equal(vKnown.body.code, "invalid_signature");
});

t.test("unknown keys: audited at info, no inbox, no channel; a known operator's burst notifies once", async (t) => {
  t.equal(channel.status, 201);
  type Sent = { severity: string; target: { name: string } };
  const toChannel = () => rx.got.filter((r) => r.url === "/all").map((r) => JSON.parse(r.body) as Sent);
  const seen = async (name: string) =>
    (await loginFailedNotifications()).some((n) => n.summary.includes(name)) &&
    toChannel().some((e) => e.target.name === name);
  // Bob's failure from the test above notifies and is delivered; count only what follows it.
  await eventually(() => seen("bob"), 20_000);
  const before = (await loginFailedNotifications()).length;
  const deliveredBefore = toChannel().length;

  const stranger = ed25519().publicKeyHex;
  for (let i = 0; i < 5; i++) t.equal((await challenge(stranger)).status, 401);
  const quiet = await eventually(async () => {
    const evs = (await failures()).filter((e) => e.metadata.public_key === stranger);
    return evs.length === 5 ? evs : undefined;
  }, 20_000);
  t.ok(
    quiet.every((e) => e.severity === "info"),
    "recorded at info",
  );
  t.ok(quiet.every((e) => e.metadata.reason === "unknown_operator" && e.metadata.known_operator === false));

  // A burst against a real operator (a fresh one: its window has not opened yet).
  const carolKey = ed25519();
  t.equal((await api("POST", "/api/v1/operators", { name: "carol", public_key: carolKey.publicKeyHex })).status, 201);
  for (let i = 0; i < 4; i++) t.equal((await badVerify(carolKey.publicKeyHex)).status, 401);
  const burst = await eventually(async () => {
    const evs = (await failures()).filter((e) => e.metadata.public_key === carolKey.publicKeyHex);
    return evs.length === 4 ? evs : undefined;
  }, 20_000);
  t.same(burst.map((e) => e.severity).sort(), ["info", "info", "info", "warning"], "the window's first is a warning");
  t.ok(burst.every((e) => e.target.name === "carol"));

  // notify handles events in stream order: once carol's warning arrived, everything before it was judged.
  await eventually(() => seen("carol"), 20_000);
  // A few more worker rounds, so a late notification or delivery would be seen.
  await new Promise((r) => setTimeout(r, 1500));
  const inbox = (await loginFailedNotifications()).length - before;
  const sent = toChannel().slice(deliveredBefore);
  t.equal(inbox, 1, "exactly one notification: carol's first failure; none for the unknown key");
  t.equal(sent.length, 1, "exactly one channel delivery although the channel takes info");
  t.equal(sent[0]?.severity, "warning");
  t.equal(sent[0]?.target.name, "carol");
});

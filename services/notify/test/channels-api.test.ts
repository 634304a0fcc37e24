import t, { type Test } from "tap";
import { fromBinary, toJsonString } from "@bufbuild/protobuf";
import { AuditEventSchema } from "@orch/contracts";
import { createTestDatabase, ed25519, eventually, memoryLogger, startNats } from "@orch/kit/testing";
import { call, login, startAuth, startGateway } from "../../gateway/test/harness.js";
import { FAST, startNotify, startReceiver } from "./harness.js";

// The /channels API through the real gateway, auth and notify services: roles, validation,
// masking of credentials, updates that keep masked credentials, and real test sends.
const nats = await startNats();
const db = await createTestDatabase();
const admin = ed25519();
const auth = await startAuth(nats, db, admin);
const logs = memoryLogger("notify", "debug");
const notify = await startNotify(nats, db, FAST, { log: logs.log });
const gw = await startGateway(nats);
const rx = await startReceiver();
t.teardown(async () => {
  await rx.close();
  await gw.stop();
  await notify.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});

const nc = await nats.connect("observer");
const events: string[] = [];
nc.subscribe("audit.channel.>", {
  callback: (_e, m) => void events.push(toJsonString(AuditEventSchema, fromBinary(AuditEventSchema, m.data))),
});

const adminToken = await login(gw.url, admin);
const opKey = ed25519();
await call(gw.url, "POST", "/api/v1/operators", {
  token: adminToken,
  body: { name: "olivia", public_key: opKey.publicKeyHex, role: "operator" },
});
const opToken = await login(gw.url, opKey);

const SECRETS = ["tok-DISCORD-123", "tk_NTFY_secret", "hdr-SECRET-value", "SLACKPATH/XYZ"];
const problem = (
  t: Test,
  r: { status: number; type: string; body: any },
  status: number,
  code: string,
  field?: string,
) => {
  t.equal(r.status, status, `status ${status}`);
  t.match(r.type, /application\/problem\+json/);
  t.equal(r.body?.code, code, `code ${code}`);
  if (field) t.match(JSON.stringify(r.body), field, `names ${field}`);
};
const count = async () =>
  (await call(gw.url, "GET", "/api/v1/channels?limit=500", { token: adminToken })).body.channels.length;

t.test("create: admin only, validated per type, credentials masked in every response", async (t) => {
  const discord = await call(gw.url, "POST", "/api/v1/channels", {
    token: adminToken,
    body: {
      name: "ops discord",
      channel_type: "discord",
      config: { webhook_url: "https://discord.com/api/webhooks/42/tok-DISCORD-123", min_severity: "error" },
    },
  });
  t.equal(discord.status, 201);
  t.match(discord.body, {
    name: "ops discord",
    channel_type: "discord",
    enabled: true,
    config: { webhook_url: "https://discord.com/********", min_severity: "error" },
  });
  t.ok(
    Number.isInteger(discord.body.created_at) && Math.abs(discord.body.created_at - Date.now() / 1000) < 120,
    "created_at in Unix seconds",
  );
  const me = await call(gw.url, "GET", "/api/v1/auth/whoami", { token: adminToken });
  t.equal(discord.body.created_by, me.body.id);

  const ntfy = await call(gw.url, "POST", "/api/v1/channels", {
    token: adminToken,
    body: {
      name: "phone",
      channel_type: "ntfy",
      config: { server_url: rx.url, topic: "alerts", token: "tk_NTFY_secret" },
    },
  });
  t.equal(ntfy.status, 201);
  t.equal(ntfy.body.config.token, "********");
  const slack = await call(gw.url, "POST", "/api/v1/channels", {
    token: adminToken,
    body: {
      name: "slack",
      channel_type: "slack",
      config: { webhook_url: "https://hooks.slack.com/services/SLACKPATH/XYZ" },
    },
  });
  t.equal(slack.body.config.webhook_url, "https://hooks.slack.com/********");
  const hook = await call(gw.url, "POST", "/api/v1/channels", {
    token: adminToken,
    body: {
      name: "hook",
      channel_type: "webhook",
      config: { url: `${rx.url}/hook`, headers: { Authorization: "hdr-SECRET-value" } },
    },
  });
  t.equal(hook.status, 201);
  t.match(hook.body.config.secret, /^whsec_[A-Za-z0-9+/]+=*$/, "generated secret returned once");
  t.equal(hook.body.config.headers.Authorization, "********");

  for (const path of [
    "/api/v1/channels",
    `/api/v1/channels/${ntfy.body.id}`,
    "/api/v1/channels/phone",
    `/api/v1/channels/${hook.body.id}`,
  ]) {
    const r = await call(gw.url, "GET", path, { token: opToken });
    t.equal(r.status, 200, `operator may read ${path}`);
    for (const s of [...SECRETS, hook.body.config.secret])
      t.notOk(r.text.includes(s), `${path} does not reveal ${s.slice(0, 8)}…`);
  }
  t.equal(
    (await call(gw.url, "GET", "/api/v1/channels/hook", { token: opToken })).body.config.secret,
    "whsec_********",
  );

  const n = await count();
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/channels", {
      token: adminToken,
      body: { name: "x", channel_type: "pagerduty", config: {} },
    }),
    400,
    "invalid_channel_type",
    "channel_type",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/channels", { token: adminToken, body: { name: "x", channel_type: "webhook" } }),
    400,
    "invalid_request",
    "config",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/channels", {
      token: adminToken,
      body: { name: "x", channel_type: "webhook", config: { url: "file:///etc/passwd" } },
    }),
    400,
    "invalid_config",
    "config.url",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/channels", {
      token: adminToken,
      body: { name: "x", channel_type: "ntfy", config: { server_url: rx.url } },
    }),
    400,
    "invalid_config",
    "config.topic",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/channels", {
      token: adminToken,
      body: {
        name: "x",
        channel_type: "slack",
        config: { webhook_url: "https://hooks.slack.com/x", min_severity: "panic" },
      },
    }),
    400,
    "invalid_config",
    "config.min_severity",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/channels", {
      token: adminToken,
      body: { name: "", channel_type: "slack", config: {} },
    }),
    400,
    "invalid_request",
    "name",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/channels", {
      token: adminToken,
      body: { name: "phone", channel_type: "ntfy", config: { topic: "t" } },
    }),
    409,
    "channel_exists",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/channels", {
      token: opToken,
      body: { name: "y", channel_type: "ntfy", config: { topic: "t" } },
    }),
    403,
    "admin_required",
  );
  t.equal(await count(), n, "refused requests created nothing");
});

t.test("update: channel_type immutable, masked credentials kept, unknown id 404, admin only", async (t) => {
  rx.got.length = 0;
  const before = (await call(gw.url, "GET", "/api/v1/channels/phone", { token: adminToken })).body;
  problem(
    t,
    await call(gw.url, "PUT", "/api/v1/channels/phone", { token: adminToken, body: { channel_type: "slack" } }),
    400,
    "channel_type_immutable",
    "channel_type",
  );
  problem(
    t,
    await call(gw.url, "PUT", "/api/v1/channels/phone", {
      token: adminToken,
      body: { config: { topic: "has space", token: "********" } },
    }),
    400,
    "invalid_config",
    "config.topic",
  );
  problem(
    t,
    await call(gw.url, "PUT", "/api/v1/channels/phone", { token: opToken, body: { name: "mine" } }),
    403,
    "admin_required",
  );
  problem(
    t,
    await call(gw.url, "PUT", "/api/v1/channels/01NOPE", { token: adminToken, body: { name: "z" } }),
    404,
    "channel_not_found",
  );
  problem(t, await call(gw.url, "GET", "/api/v1/channels/01NOPE", { token: opToken }), 404, "channel_not_found");
  problem(t, await call(gw.url, "DELETE", "/api/v1/channels/01NOPE", { token: adminToken }), 404, "channel_not_found");
  t.same(
    (await call(gw.url, "GET", "/api/v1/channels/phone", { token: adminToken })).body,
    before,
    "refused updates changed nothing",
  );

  // A GET → edit → PUT round trip sends the masked token back: the stored one must survive.
  const edited = { ...before.config, topic: "alerts-2", priority: 2 };
  const up = await call(gw.url, "PUT", "/api/v1/channels/phone", {
    token: adminToken,
    body: { name: "phone 2", config: edited },
  });
  t.equal(up.status, 200);
  t.match(up.body, {
    name: "phone 2",
    channel_type: "ntfy",
    config: { topic: "alerts-2", priority: 2, token: "********" },
  });
  const test = await call(gw.url, "POST", `/api/v1/channels/${before.id}/test`, { token: adminToken });
  t.equal(test.status, 200);
  t.equal(test.body.delivered, true);
  t.equal(rx.got.at(-1)?.url, "/alerts-2");
  t.equal(rx.got.at(-1)?.headers.authorization, "Bearer tk_NTFY_secret", "the stored token is still used");
});

t.test("test: sends a real message and reports the receiver's answer", async (t) => {
  const hook = (await call(gw.url, "GET", "/api/v1/channels/hook", { token: adminToken })).body;
  rx.respond = () => ({ status: 200, body: "x".repeat(500) });
  const ok = await call(gw.url, "POST", `/api/v1/channels/${hook.id}/test`, { token: adminToken });
  t.same(ok.body, { delivered: true, status_code: 200, response_snippet: "x".repeat(200), error: null });
  const sent = rx.got.at(-1)!;
  t.equal(sent.headers.authorization, "hdr-SECRET-value", "custom header sent with its stored value");
  t.equal(JSON.parse(sent.body).event_type, "channel.tested");
  t.ok(sent.headers["webhook-signature"], "test messages are signed too");

  rx.respond = () => ({ status: 500, body: "internal trouble" });
  const bad = await call(gw.url, "POST", `/api/v1/channels/${hook.id}/test`, { token: adminToken });
  t.same(bad.body, { delivered: false, status_code: 500, response_snippet: "internal trouble", error: "HTTP 500" });
  // A receiver echoing our request back must not make the API reveal the credential.
  rx.respond = (_n, req) => ({ status: 400, body: `you sent authorization=${String(req.headers.authorization)}` });
  const echo = await call(gw.url, "POST", `/api/v1/channels/${hook.id}/test`, { token: adminToken });
  t.equal(
    echo.body.response_snippet,
    "you sent authorization=********",
    "credentials cut out of the receiver's answer",
  );
  rx.respond = () => ({ status: 200, body: "ok" });
  problem(t, await call(gw.url, "POST", `/api/v1/channels/${hook.id}/test`, { token: opToken }), 403, "admin_required");

  // Rotation: secret null → a new secret, shown once.
  const rotated = await call(gw.url, "PUT", `/api/v1/channels/${hook.id}`, {
    token: adminToken,
    body: { config: { url: hook.config.url, secret: null } },
  });
  t.match(rotated.body.config.secret, /^whsec_/);
  t.not(rotated.body.config.secret, "whsec_********");
  t.equal(rotated.body.config.headers.Authorization, "********", "omitted headers are kept");
});

t.test("delete: admin only; events for every change, none carrying a credential; no credential in logs", async (t) => {
  problem(t, await call(gw.url, "DELETE", "/api/v1/channels/slack", { token: opToken }), 403, "admin_required");
  const del = await call(gw.url, "DELETE", "/api/v1/channels/slack", { token: adminToken });
  t.equal(del.status, 204);
  problem(t, await call(gw.url, "GET", "/api/v1/channels/slack", { token: adminToken }), 404, "channel_not_found");
  await eventually(() =>
    ["created", "updated", "tested", "deleted"].every((k) => events.some((e) => e.includes(`"channel.${k}"`))),
  );
  const all = events.join("\n") + logs.lines.join("\n");
  for (const s of SECRETS) t.notOk(all.includes(s), `no ${s.slice(0, 8)}… in events or logs`);
  t.notOk(/whsec_[A-Za-z0-9+/]{20,}/.test(all), "no webhook secret in events or logs");
});

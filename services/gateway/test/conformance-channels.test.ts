import t from "tap";
import { createTestDatabase, ed25519, startNats } from "@orch/kit/testing";
import { FAST, startNotify } from "../../notify/test/harness.js";
import { call, login, startAuth, startGateway } from "./harness.js";

// PUT /api/v1/channels/{id} against the API contract ("channel_type is not updatable"): a client that
// echoes the channel_type GET returned is not changing it, so it is accepted; only a change is refused.
const nats = await startNats();
const db = await createTestDatabase();
const adminKey = ed25519();
const auth = await startAuth(nats, db, adminKey);
const notify = await startNotify(nats, db, FAST);
const gw = await startGateway(nats);
t.teardown(async () => {
  await gw.stop();
  await notify.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});
const token = await login(gw.url, adminKey);
const created = await call(gw.url, "POST", "/api/v1/channels", {
  token,
  body: { name: "pager", channel_type: "ntfy", config: { topic: "alerts", token: "tk-SECRET-1" } },
});
if (created.status !== 201) throw new Error(`cannot create a channel: ${created.text}`);
const id: string = created.body.id;

t.test("PUT echoing GET (unchanged channel_type) is accepted and applies the change", async (t) => {
  const got = (await call(gw.url, "GET", `/api/v1/channels/${id}`, { token })).body;
  const { name, channel_type, config } = got;
  const r = await call(gw.url, "PUT", `/api/v1/channels/${id}`, {
    token,
    body: { name, channel_type, config: { ...config, topic: "alerts-2" } },
  });
  t.equal(r.status, 200, r.text);
  t.equal(r.body.channel_type, "ntfy");
  t.equal(r.body.config.topic, "alerts-2", "the rest of the update applied");
  t.equal(r.body.config.token, "********", "the masked credential echoed back kept its value (still set)");

  const byName = await call(gw.url, "PUT", "/api/v1/channels/pager", { token, body: { channel_type: "ntfy" } });
  t.equal(byName.status, 200, "also when the channel is addressed by name");
});

t.test("a changed or malformed channel_type is still 400 channel_type_immutable; nothing changes", async (t) => {
  for (const channel_type of ["slack", "NTFY", "", null, 7, ["ntfy"]]) {
    const r = await call(gw.url, "PUT", `/api/v1/channels/${id}`, {
      token,
      body: { channel_type, config: { topic: "changed" } },
    });
    t.equal(r.status, 400, `${JSON.stringify(channel_type)} → 400`);
    t.equal(r.body.code, "channel_type_immutable");
    t.equal(r.body.field, "channel_type");
  }
  const after = (await call(gw.url, "GET", `/api/v1/channels/${id}`, { token })).body;
  t.equal(after.config.topic, "alerts-2", "refused updates changed nothing");
  t.equal(after.channel_type, "ntfy");
});

t.test("an unknown channel with a channel_type is 404, as without one", async (t) => {
  const r = await call(gw.url, "PUT", "/api/v1/channels/nope", { token, body: { channel_type: "ntfy" } });
  t.equal(r.status, 404);
  t.equal(r.body.code, "channel_not_found");
});

import t, { type Test } from "tap";
import { createHmac, timingSafeEqual } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, NotifyService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, startNats } from "@orch/kit/testing";
import { FAST, publishEvent, startNotify, startReceiver, type Received } from "./harness.js";

// Deliveries end to end: AUDIT event → stored delivery → real HTTP request to a real receiver, in
// each channel type's native format; retries, Retry-After, 410, max attempts, maintenance windows.
const nats = await startNats();
const db = await createTestDatabase();
// Notifications only for critical events, so this file needs no auth service; channels take warning+.
const notify = await startNotify(nats, db, { ...FAST, min_severity: "critical", max_attempts: 4 });
const rx = await startReceiver();
const nc = await nats.connect("t");
t.teardown(async () => {
  await rx.close();
  await notify.stop();
  await db.drop();
  await nats.stop();
});

const admin = { actor: { id: "01ADMIN", name: "root", type: "operator", role: "admin" } };
const client = rpcClient(nc, "notify", NotifyService, { timeoutMs: 10_000 });
const events: Array<{ type: string; targetId: string; summary: string }> = [];
nc.subscribe("audit.channel.>", {
  callback: (_e, m) => {
    const ev = fromBinary(AuditEventSchema, m.data);
    events.push({ type: ev.eventType, targetId: ev.target?.id ?? "", summary: ev.summary });
  },
});

const requestsTo = (path: string) => rx.got.filter((r) => r.url.startsWith(path));
const deliveries = async (channel: string, status?: string) =>
  (await client.listDeliveries({ channelId: channel, status: status ?? "" }, admin)).deliveries;
/** A channel that lives for one subtest, so later subtests' events do not reach it. */
async function channel(t: Test, name: string, channelType: string, config: Record<string, unknown>) {
  const c = await client.createChannel({ name, channelType, config: config as never }, admin);
  t.teardown(() => client.deleteChannel({ id: c.id }, admin).then(() => undefined));
  return c;
}

/** Standard Webhooks verification written from the spec (standardwebhooks.com), independent of src/. */
function verifyStandardWebhook(secret: string, r: Received, nowSec: number): boolean {
  const id = String(r.headers["webhook-id"] ?? "");
  const ts = String(r.headers["webhook-timestamp"] ?? "");
  const sigs = String(r.headers["webhook-signature"] ?? "");
  if (!id || !/^\d+$/.test(ts) || Math.abs(nowSec - Number(ts)) > 300) return false;
  const key = Buffer.from(secret.split("_")[1]!, "base64");
  const expected = createHmac("sha256", key).update(`${id}.${ts}.${r.body}`).digest();
  return sigs.split(" ").some((s) => {
    const [version, b64] = s.split(",");
    const got = Buffer.from(b64 ?? "", "base64");
    return version === "v1" && got.length === expected.length && timingSafeEqual(got, expected);
  });
}

t.test("webhook: the event as JSON, signed per Standard Webhooks with the generated secret", async (t) => {
  const c = await channel(t, "hook", "webhook", { url: `${rx.url}/hook?x=1`, headers: { "X-Api-Key": "k-123" } });
  const secret = String(c.config!.secret);
  t.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/, "generated secret shown at creation");
  t.equal((await client.getChannel({ id: c.id }, admin)).config!.secret, "whsec_********", "and masked afterwards");

  const ev = await publishEvent(nc, {
    type: "drift.detected",
    summary: "web-1 drifted: 2 resources",
    metadata: { resources: ["motd", "nginx"] },
  });
  const [d] = await eventually(async () => {
    const x = await deliveries(c.id, "delivered");
    return x.length ? x : undefined;
  });
  const r = requestsTo("/hook")[0]!;
  t.equal(r.method, "POST");
  t.equal(r.url, "/hook?x=1");
  t.match(r.headers["content-type"], /^application\/json/);
  t.equal(r.headers["x-api-key"], "k-123", "custom header sent with its real value");
  t.equal(r.headers["webhook-id"], d!.id, "webhook-id is the delivery id");
  t.ok(verifyStandardWebhook(secret, r, Math.floor(Date.now() / 1000)), "signature verifies independently");
  t.notOk(
    verifyStandardWebhook(`whsec_${Buffer.alloc(32, 9).toString("base64")}`, r, Math.floor(Date.now() / 1000)),
    "and not with another secret",
  );
  t.notOk(
    verifyStandardWebhook(secret, { ...r, body: r.body.replace("drifted", "drifter") }, Math.floor(Date.now() / 1000)),
    "nor for a changed body",
  );
  const body = JSON.parse(r.body);
  t.same(body, {
    id: ev.id,
    timestamp: ev.timestamp,
    event_type: "drift.detected",
    severity: "warning",
    summary: "web-1 drifted: 2 resources",
    actor: { id: "system", name: "system", type: "system" },
    target: { id: "node-1", name: "web-1", type: "agent" },
    metadata: { resources: ["motd", "nginx"] },
  });
  t.equal(d!.attempts, 1);
  t.equal(d!.lastStatusCode, 200);
});

t.test("slack: text + blocks with a mrkdwn section, per Slack's incoming-webhook format", async (t) => {
  const c = await channel(t, "slack", "slack", {
    webhook_url: `${rx.url}/services/T000/B000/XXXX`,
    event_types: ["state"],
  });
  await publishEvent(nc, {
    type: "state.apply.failed",
    summary: "apply on web-1 failed <script> & more",
    target: { id: "n1", name: "web-1", type: "agent" },
  });
  await eventually(async () => (await deliveries(c.id, "delivered")).length === 1);
  const r = requestsTo("/services/T000/B000/XXXX")[0]!;
  t.match(r.headers["content-type"], /^application\/json/);
  const p = JSON.parse(r.body);
  t.type(p.text, "string");
  t.match(p.text, /ERROR.*state\.apply\.failed/);
  t.ok(Array.isArray(p.blocks) && p.blocks.length >= 1 && p.blocks.length <= 50, "1..50 blocks");
  const section = p.blocks[0];
  t.equal(section.type, "section");
  t.equal(section.text.type, "mrkdwn");
  t.ok(section.text.text.length <= 3000, "section text ≤ 3000 characters");
  t.match(section.text.text, /^\*\[ERROR\] state\.apply\.failed\*\n/);
  t.match(section.text.text, /&lt;script&gt; &amp; more/, "mrkdwn control characters escaped");
  for (const b of p.blocks) {
    t.equal(b.type, "section");
    for (const f of b.fields ?? []) {
      t.equal(f.type, "mrkdwn");
      t.ok(f.text.length <= 2000, "field text ≤ 2000");
    }
    t.ok((b.fields ?? []).length <= 10, "≤ 10 fields");
  }
  t.match(JSON.stringify(p.blocks[1].fields), /web-1/);
});

t.test(
  "discord: content + embeds with severity colour, timestamp and fields, per Discord's execute-webhook format",
  async (t) => {
    const c = await channel(t, "discord", "discord", {
      webhook_url: `${rx.url}/api/webhooks/123/tok`,
      event_types: ["agent.disconnected", "state.apply"],
    });
    const warn = await publishEvent(nc, { type: "agent.disconnected", summary: "web-1 went away @everyone" });
    await eventually(async () => (await deliveries(c.id, "delivered")).length === 1);
    await publishEvent(nc, { type: "state.apply.failed", summary: "apply failed" });
    await eventually(async () => (await deliveries(c.id, "delivered")).length === 2);
    const [r1, r2] = requestsTo("/api/webhooks/123/tok");
    const p = JSON.parse(r1!.body);
    t.match(r1!.headers["content-type"], /^application\/json/);
    t.type(p.content, "string");
    t.ok(p.content.length <= 2000);
    t.equal(p.embeds.length, 1);
    const e = p.embeds[0];
    t.equal(e.title, "agent.disconnected");
    t.ok(e.title.length <= 256);
    t.equal(e.description, "web-1 went away @everyone");
    t.equal(e.color, 0xf1c40f, "warning is yellow");
    t.equal(e.timestamp, warn.timestamp, "ISO 8601 timestamp of the event");
    t.ok(!Number.isNaN(Date.parse(e.timestamp)));
    t.ok(e.fields.length <= 25);
    for (const f of e.fields) {
      t.type(f.name, "string");
      t.type(f.value, "string");
      t.ok(f.name.length <= 256 && f.value.length <= 1024 && f.value.length > 0);
      t.type(f.inline, "boolean");
    }
    t.same(e.fields.find((f: { name: string }) => f.name === "Severity")?.value, "warning");
    t.same(p.allowed_mentions, { parse: [] }, "summaries cannot ping @everyone");
    t.equal(JSON.parse(r2!.body).embeds[0].color, 0xe74c3c, "error is red");
  },
);

t.test("ntfy: message body with Title, Priority, Tags and bearer token, per ntfy's publish API", async (t) => {
  const c = await channel(t, "ntfy", "ntfy", {
    server_url: `${rx.url}/ntfy/`,
    topic: "orch-alerts",
    token: "tk_abc",
    event_types: ["drift"],
  });
  const p4 = await channel(t, "ntfy-p1", "ntfy", {
    server_url: rx.url,
    topic: "quiet",
    priority: 1,
    event_types: ["drift"],
  });
  await publishEvent(nc, { type: "drift.detected", summary: "web-1 drifted ✓" });
  await eventually(
    async () =>
      (await deliveries(c.id, "delivered")).length === 1 && (await deliveries(p4.id, "delivered")).length === 1,
  );
  const r = requestsTo("/ntfy/orch-alerts")[0]!;
  t.equal(r.method, "POST");
  t.equal(r.body, "web-1 drifted ✓", "the message is the body, UTF-8");
  t.match(r.headers["content-type"], /^text\/plain/);
  t.equal(r.headers.title, "[WARNING] drift.detected");
  t.equal(r.headers.priority, "4", "warning → high (4)");
  t.equal(r.headers.tags, "warning,drift.detected");
  t.equal(r.headers.authorization, "Bearer tk_abc");
  const q = requestsTo("/quiet")[0]!;
  t.equal(q.headers.priority, "1", "configured priority wins");
  t.equal(q.headers.authorization, undefined, "no token, no Authorization");
});

t.test("a receiver failing twice with 500 gets the delivery once, on the third try", async (t) => {
  rx.respond = (_n, req) =>
    req.url === "/flaky" && requestsTo("/flaky").length < 2
      ? { status: 500, body: "boom" }
      : { status: 200, body: "ok" };
  t.teardown(() => void (rx.respond = () => ({ status: 200, body: "ok" })));
  const c = await channel(t, "flaky", "webhook", { url: `${rx.url}/flaky` });
  await publishEvent(nc, { type: "drift.detected", summary: "flaky" });
  const [d] = await eventually(async () => {
    const x = await deliveries(c.id, "delivered");
    return x.length ? x : undefined;
  });
  const got = requestsTo("/flaky");
  t.same(
    got.map((r) => r.status),
    [500, 500, 200],
  );
  t.equal(new Set(got.map((r) => r.headers["webhook-id"])).size, 1, "same webhook-id on every try");
  t.equal(d!.attempts, 3);
  // Further worker rounds do not send it again.
  await new Promise((r) => setTimeout(r, 500));
  t.equal(requestsTo("/flaky").length, 3, "delivered once");
});

t.test("Retry-After is honoured", async (t) => {
  rx.respond = (_n, req) =>
    req.url === "/busy" && requestsTo("/busy").length === 0
      ? { status: 503, headers: { "retry-after": "1" } }
      : { status: 204 };
  t.teardown(() => void (rx.respond = () => ({ status: 200, body: "ok" })));
  const times: number[] = [];
  const orig = rx.respond;
  rx.respond = (n, req) => {
    if (req.url === "/busy") times.push(Date.now());
    return orig(n, req);
  };
  const c = await channel(t, "busy", "webhook", { url: `${rx.url}/busy` });
  await publishEvent(nc, { type: "drift.detected", summary: "busy" });
  await eventually(async () => (await deliveries(c.id, "delivered")).length === 1);
  t.equal(times.length, 2);
  t.ok(
    times[1]! - times[0]! >= 990,
    `second try waited for Retry-After (${times[1]! - times[0]!} ms ≥ 1000 ms; the backoff alone is ≤ 100 ms)`,
  );
});

t.test("3xx is not followed and counts as a failure; max attempts → failed + channel.delivery.failed", async (t) => {
  rx.respond = (_n, req) =>
    req.url === "/moved" ? { status: 301, headers: { location: `${rx.url}/elsewhere` } } : { status: 200 };
  t.teardown(() => void (rx.respond = () => ({ status: 200, body: "ok" })));
  const c = await channel(t, "moved", "webhook", { url: `${rx.url}/moved` });
  await publishEvent(nc, { type: "drift.detected", summary: "moved" });
  const [d] = await eventually(async () => {
    const x = await deliveries(c.id, "failed");
    return x.length ? x : undefined;
  }, 15_000);
  t.equal(d!.attempts, 4, "notify.max_attempts");
  t.equal(d!.lastStatusCode, 301);
  t.match(d!.lastError, /redirects are not followed/);
  t.equal(requestsTo("/moved").length, 4);
  t.equal(requestsTo("/elsewhere").length, 0);
  await eventually(() => events.some((e) => e.type === "channel.delivery.failed" && e.targetId === c.id));
});

t.test("410 Gone disables the channel (channel.disabled) and stops further deliveries", async (t) => {
  rx.respond = (_n, req) => (req.url === "/gone" ? { status: 410, body: "gone" } : { status: 200 });
  t.teardown(() => void (rx.respond = () => ({ status: 200, body: "ok" })));
  const c = await channel(t, "gone", "webhook", { url: `${rx.url}/gone` });
  await publishEvent(nc, { type: "drift.detected", summary: "gone 1" });
  await eventually(async () => !(await client.getChannel({ id: c.id }, admin)).enabled);
  const ch = await client.getChannel({ id: c.id }, admin);
  t.match(ch.disabledReason, /410/);
  t.equal((await deliveries(c.id, "failed")).length, 1);
  await eventually(() => events.some((e) => e.type === "channel.disabled" && e.targetId === c.id));
  // channel.disabled is itself a warning event; it must not be sent through the disabled channel.
  await publishEvent(nc, { type: "drift.detected", summary: "gone 2" });
  const marker = await channel(t, "after-gone", "webhook", { url: `${rx.url}/marker`, event_types: ["drift"] });
  await publishEvent(nc, { type: "drift.detected", summary: "marker" });
  await eventually(async () => {
    const got = await deliveries(marker.id);
    if (got.length === 1 && got[0]!.status === "delivered") return true;
    // Named in the timeout's message: which step a miss stopped at (no row, retrying, failed).
    throw new Error(`marker deliveries: ${JSON.stringify(got.map((d) => [d.status, d.attempts, d.lastError]))}`);
  });
  t.equal(requestsTo("/gone").length, 1, "nothing more reached the gone receiver");
  t.equal((await deliveries(c.id)).length, 1, "no new deliveries for a disabled channel");

  const re = await client.updateChannel({ id: c.id, enabled: true }, admin);
  t.equal(re.enabled, true, "an admin can enable it again");
  t.equal(re.disabledReason, "");
});

t.test(
  "during an active maintenance window deliveries are suppressed; they resume after it is ended early",
  async (t) => {
    const c = await channel(t, "maint", "webhook", { url: `${rx.url}/maint` });
    const now = Date.now();
    const w = await client.createWindow(
      {
        startsAt: Math.floor(now / 1000) * 1000 - 60_000,
        endsAt: Math.floor(now / 1000) * 1000 + 3_600_000,
        reason: "upgrade",
      },
      admin,
    );
    t.same((await client.getMaintenanceStatus({}, admin)).active, true);
    t.equal((await client.getMaintenanceStatus({}, admin)).window?.id, w.id);
    await publishEvent(nc, { type: "drift.detected", summary: "during the window" });
    const [s] = await eventually(async () => {
      const x = await deliveries(c.id, "suppressed");
      return x.length ? x : undefined;
    });
    t.match(s!.lastError, new RegExp(`maintenance window ${w.id}`));

    await client.updateWindow({ id: w.id, endsAt: Math.floor(Date.now() / 1000) * 1000 }, admin);
    t.same((await client.getMaintenanceStatus({}, admin)).active, false);
    await publishEvent(nc, { type: "drift.detected", summary: "after the window" });
    await eventually(async () => (await deliveries(c.id, "delivered")).length === 1);
    const got = requestsTo("/maint");
    t.equal(got.length, 1, "only the event after the window was sent");
    t.equal(JSON.parse(got[0]!.body).summary, "after the window");
    t.equal((await deliveries(c.id, "suppressed")).length, 1, "the suppressed one stays suppressed");
  },
);

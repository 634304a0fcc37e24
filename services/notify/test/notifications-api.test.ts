import t, { type Test } from "tap";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, NotifyService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { createTestDatabase, ed25519, eventually, startNats } from "@orch/kit/testing";
import { call, login, startAuth, startGateway } from "../../gateway/test/harness.js";
import { FAST, publishEvent, startNotify } from "./harness.js";

// Per-operator notifications and maintenance windows through the real gateway, auth and notify.
const nats = await startNats();
const db = await createTestDatabase();
const admin = ed25519();
const auth = await startAuth(nats, db, admin);
const notify = await startNotify(nats, db, FAST);
const gw = await startGateway(nats);
t.teardown(async () => {
  await gw.stop();
  await notify.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});

const nc = await nats.connect("observer");
const seen: string[] = [];
nc.subscribe("audit.>", { callback: (_e, m) => void seen.push(fromBinary(AuditEventSchema, m.data).eventType) });

const adminToken = await login(gw.url, admin);
const opKey = ed25519();
const olivia = await call(gw.url, "POST", "/api/v1/operators", {
  token: adminToken,
  body: { name: "olivia", public_key: opKey.publicKeyHex, role: "operator" },
});
const opToken = await login(gw.url, opKey);
const list = (token: string, q = "") => call(gw.url, "GET", `/api/v1/notifications${q}`, { token });
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
  if (field) t.match(JSON.stringify(r.body), field);
};

t.test("events at or above warning become one notification per active operator", async (t) => {
  const warn = await publishEvent(nc, { type: "drift.detected", summary: "web-1 drifted" });
  await publishEvent(nc, { type: "agent.connected", summary: "info events are not notifications" });
  const err = await publishEvent(nc, { type: "state.apply.failed", summary: "apply failed on web-2" });
  await eventually(
    async () =>
      (await list(opToken)).body.notifications.length === 2 && (await list(adminToken)).body.notifications.length === 2,
  );
  for (const token of [adminToken, opToken]) {
    const r = await list(token);
    t.equal(r.status, 200);
    t.equal(r.body.unread_count, 2);
    t.same(
      r.body.notifications.map((n: Record<string, unknown>) => ({ ...n, id: typeof n.id })),
      [
        {
          id: "string",
          event_id: err.id,
          event_type: "state.apply.failed",
          severity: "error",
          summary: "apply failed on web-2",
          timestamp_ms: Date.parse(err.timestamp),
          read: false,
        },
        {
          id: "string",
          event_id: warn.id,
          event_type: "drift.detected",
          severity: "warning",
          summary: "web-1 drifted",
          timestamp_ms: Date.parse(warn.timestamp),
          read: false,
        },
      ],
      "newest first, documented fields",
    );
  }
  const a = (await list(adminToken)).body.notifications[0].id;
  const o = (await list(opToken)).body.notifications[0].id;
  t.not(a, o, "each operator has its own notification");
});

t.test("read and read-all are per operator; another operator's id is 404", async (t) => {
  const adminN = (await list(adminToken)).body.notifications;
  const opN = (await list(opToken)).body.notifications;

  problem(
    t,
    await call(gw.url, "POST", `/api/v1/notifications/${adminN[0].id}/read`, { token: opToken }),
    404,
    "notification_not_found",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/notifications/01NOTHING/read", { token: opToken }),
    404,
    "notification_not_found",
  );
  t.equal((await list(adminToken)).body.unread_count, 2, "the admin's notification stayed unread");

  const r = await call(gw.url, "POST", `/api/v1/notifications/${opN[1].id}/read`, { token: opToken });
  t.equal(r.status, 200);
  t.same(r.body, { notification: { ...opN[1], read: true }, unread_count: 1 });
  const again = await call(gw.url, "POST", `/api/v1/notifications/${opN[1].id}/read`, { token: opToken });
  t.equal(again.status, 200, "reading twice is fine");
  t.equal(again.body.unread_count, 1);

  const unread = await list(opToken, "?unread=true");
  t.same(
    unread.body.notifications.map((n: { id: string }) => n.id),
    [opN[0].id],
    "unread=true lists only unread",
  );
  t.equal((await list(opToken, "?unread=false")).body.notifications.length, 2, "unread=false lists all");
  t.equal((await list(adminToken)).body.unread_count, 2, "the admin is untouched");

  const all = await call(gw.url, "POST", "/api/v1/notifications/read-all", { token: opToken });
  t.same(all.body, { marked: 1, unread_count: 0 });
  t.equal((await list(opToken, "?unread=true")).body.notifications.length, 0);
  t.equal((await list(adminToken)).body.unread_count, 2, "read-all of one operator leaves the other's");
  await eventually(() => seen.filter((s) => s === "notification.read").length >= 2);
});

t.test("limit: default 50, max 200, anything else 400", async (t) => {
  const n0 = (await list(opToken)).body.unread_count;
  await Promise.all(
    Array.from({ length: 60 }, (_, i) => publishEvent(nc, { type: "drift.detected", summary: `bulk ${i}` })),
  );
  await eventually(async () => (await list(opToken)).body.unread_count === n0 + 60, 20_000);
  const def = await list(opToken);
  t.equal(def.body.notifications.length, 50, "default 50");
  t.equal(def.body.has_more, true);
  const next = await list(opToken, `?cursor=${def.body.next_cursor}`);
  t.equal(next.body.notifications.length, 12, "the rest on the next page");
  t.equal(new Set([...def.body.notifications, ...next.body.notifications].map((n: { id: string }) => n.id)).size, 62);
  t.equal((await list(opToken, "?limit=200")).body.notifications.length, 62);
  t.equal((await list(opToken, "?limit=1")).body.notifications.length, 1);
  for (const q of ["?limit=201", "?limit=0", "?limit=-1", "?limit=abc", "?limit=1.5"])
    problem(t, await list(opToken, q), 400, "invalid_request", "limit");
  problem(t, await list(opToken, "?unread=maybe"), 400, "invalid_request", "unread");
  problem(t, await call(gw.url, "GET", "/api/v1/notifications"), 401, "unauthenticated");
});

t.test("maintenance windows: admin-only changes, invalid_window, end early, status RPC", async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const body = { starts_at: now - 60, ends_at: now + 3600, reason: "kernel upgrades" };
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/maintenance-windows", { token: opToken, body }),
    403,
    "admin_required",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/maintenance-windows", {
      token: adminToken,
      body: { ...body, ends_at: now - 60 },
    }),
    400,
    "invalid_window",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/maintenance-windows", {
      token: adminToken,
      body: { ...body, ends_at: now - 120 },
    }),
    400,
    "invalid_window",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/maintenance-windows", {
      token: adminToken,
      body: { starts_at: now, ends_at: now + 1 },
    }),
    400,
    "invalid_request",
    "reason",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/maintenance-windows", {
      token: adminToken,
      body: { ...body, starts_at: "yesterday" },
    }),
    400,
    "invalid_request",
    "starts_at",
  );
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/maintenance-windows", { token: adminToken, body: { ...body, starts_at: 1.5 } }),
    400,
    "invalid_request",
    "starts_at",
  );
  t.equal(
    (await call(gw.url, "GET", "/api/v1/maintenance-windows", { token: opToken })).body.windows.length,
    0,
    "nothing was created",
  );

  const c = await call(gw.url, "POST", "/api/v1/maintenance-windows", { token: adminToken, body });
  t.equal(c.status, 201);
  const me = (await call(gw.url, "GET", "/api/v1/auth/whoami", { token: adminToken })).body;
  t.same(c.body, { id: c.body.id, ...body, created_by: me.id, active: true });
  const status = rpcClient(nc, "notify", NotifyService, { timeoutMs: 5000 });
  t.equal((await status.getMaintenanceStatus({})).active, true, "orch.notify.GetMaintenanceStatus reports it");
  t.equal((await status.getMaintenanceStatus({})).window?.id, c.body.id);

  t.same((await call(gw.url, "GET", `/api/v1/maintenance-windows/${c.body.id}`, { token: opToken })).body, c.body);
  t.equal((await call(gw.url, "GET", "/api/v1/maintenance-windows", { token: opToken })).body.windows.length, 1);
  problem(
    t,
    await call(gw.url, "PUT", `/api/v1/maintenance-windows/${c.body.id}`, { token: opToken, body: { ends_at: now } }),
    403,
    "admin_required",
  );
  problem(
    t,
    await call(gw.url, "PUT", `/api/v1/maintenance-windows/${c.body.id}`, {
      token: adminToken,
      body: { ends_at: now - 600 },
    }),
    400,
    "invalid_window",
  );
  problem(
    t,
    await call(gw.url, "PUT", "/api/v1/maintenance-windows/01NOPE", { token: adminToken, body: { ends_at: now } }),
    404,
    "window_not_found",
  );
  t.equal(
    (await call(gw.url, "GET", `/api/v1/maintenance-windows/${c.body.id}`, { token: opToken })).body.ends_at,
    now + 3600,
    "refused updates changed nothing",
  );

  const ended = await call(gw.url, "PUT", `/api/v1/maintenance-windows/${c.body.id}`, {
    token: adminToken,
    body: { ends_at: Math.floor(Date.now() / 1000) },
  });
  t.equal(ended.status, 200);
  t.equal(ended.body.active, false, "ended early");
  t.equal((await status.getMaintenanceStatus({})).active, false);

  problem(
    t,
    await call(gw.url, "DELETE", `/api/v1/maintenance-windows/${c.body.id}`, { token: opToken }),
    403,
    "admin_required",
  );
  t.equal(
    (await call(gw.url, "DELETE", `/api/v1/maintenance-windows/${c.body.id}`, { token: adminToken })).status,
    204,
  );
  problem(
    t,
    await call(gw.url, "GET", `/api/v1/maintenance-windows/${c.body.id}`, { token: adminToken }),
    404,
    "window_not_found",
  );
  await eventually(() => ["created", "updated", "deleted"].every((k) => seen.includes(`maintenance.window.${k}`)));
});

t.test("an event addressed to named operators reaches only them, whatever its severity", async (t) => {
  const ev = await publishEvent(nc, {
    type: "agent.connected",
    summary: "please approve",
    metadata: { notify_operator_ids: [olivia.body.id, olivia.body.id, "01GONE", 7] },
  });
  await eventually(async () => (await list(opToken)).body.notifications[0]?.event_id === ev.id);
  const mine = (await list(opToken)).body.notifications.filter((n: { event_id: string }) => n.event_id === ev.id);
  t.equal(mine.length, 1, "one notification, though the id was named twice");
  t.equal(mine[0].severity, "info", "below the inbox minimum, yet delivered: it was addressed");
  // A later broadcast event proves the consumer got past the addressed one without notifying the admin.
  const later = await publishEvent(nc, { type: "drift.detected", summary: "for everyone" });
  await eventually(async () => (await list(adminToken)).body.notifications[0]?.event_id === later.id);
  const adminN = (await list(adminToken)).body.notifications;
  t.notOk(
    adminN.some((n: { event_id: string }) => n.event_id === ev.id),
    "not addressed to the admin",
  );
  t.equal(
    Number(
      (await notify.deps.pool.query("SELECT count(*) AS n FROM notifications WHERE event_id = $1", [ev.id])).rows[0].n,
    ),
    1,
    "unknown and malformed ids are dropped",
  );
});

t.test("a removed operator's notifications go with it", async (t) => {
  const byeKey = ed25519();
  const bye = await call(gw.url, "POST", "/api/v1/operators", {
    token: adminToken,
    body: { name: "bye", public_key: byeKey.publicKeyHex },
  });
  const byeToken = await login(gw.url, byeKey);
  await publishEvent(nc, { type: "drift.detected", summary: "for bye too" });
  await eventually(async () => (await list(byeToken)).body.notifications.length === 1);
  t.equal((await call(gw.url, "DELETE", `/api/v1/operators/${bye.body.id}`, { token: adminToken })).status, 204);
  await eventually(
    async () =>
      Number(
        (await notify.deps.pool.query("SELECT count(*) AS n FROM notifications WHERE operator_id = $1", [bye.body.id]))
          .rows[0].n,
      ) === 0,
  );
  await publishEvent(nc, { type: "drift.detected", summary: "after bye" });
  await eventually(async () => (await list(adminToken)).body.notifications[0]?.summary === "after bye");
  t.equal(
    Number(
      (await notify.deps.pool.query("SELECT count(*) AS n FROM notifications WHERE operator_id = $1", [bye.body.id]))
        .rows[0].n,
    ),
    0,
    "no notifications for a removed operator",
  );
});

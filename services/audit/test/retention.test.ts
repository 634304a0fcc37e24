import t from "tap";
import pg from "pg";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, AuditService, type AuditEvent } from "@orch/contracts";
import { OrchError, rpcClient } from "@orch/kit";
import { eventually } from "@orch/kit/testing";
import { call } from "../../gateway/test/harness.js";
import { eventFactory } from "./harness.js";
import { startAuditApi } from "./api-stack.js";

// DELETE /audit, GET/PUT /audit/retention and the retention job, against the real service.
const stack = await startAuditApi(t);
const { gw, admin, operator, nc, publish, reader, stored, db } = stack;
const event = eventFactory();

const DAY = 86_400_000;
const now = Date.now();
const aged = {
  d40: event({ at: now - 40 * DAY }),
  d20: event({ at: now - 20 * DAY }),
  d5: event({ at: now - 5 * DAY }),
  d1: event({ at: now - DAY }),
};
await publish(Object.values(aged));
await eventually(async () => (await Promise.all(Object.values(aged).map((e) => stored(e.id)))).every(Boolean), 20_000);

const retention = (token = admin) => call(gw.url, "GET", "/api/v1/audit/retention", { token });
const put = (body: unknown, token = admin) =>
  call(gw.url, "PUT", "/api/v1/audit/retention", { token, ...(typeof body === "string" ? { raw: body } : { body }) });
const eventsOf = async (type: string) =>
  (await call(gw.url, "GET", `/api/v1/audit?event_type=${type}&limit=500`, { token: admin })).body.events as Array<
    Record<string, any>
  >;
const count = async () => Number((await reader.query("SELECT count(*) FROM events")).rows[0].count);

t.test("GET retention: the configuration file's value until an override is set", async (t) => {
  const r = await retention(operator);
  t.equal(r.status, 200, "any operator may read it");
  t.same(r.body, { retention_days: 30, source: "config", default_retention_days: 30 });
});

t.test("PUT retention rejects 0, negatives, non-integers and non-numbers; changes nothing", async (t) => {
  for (const v of [0, -1, 1.5, "7", true, 2 ** 31, 1e300]) {
    const r = await put({ retention_days: v });
    t.equal(r.status, 400, `${JSON.stringify(v)} → 400`);
    t.equal(r.body.code, "invalid_retention");
    t.match(r.body.detail, /retention_days/);
  }
  const missing = await put({});
  t.equal(missing.status, 400);
  t.equal(missing.body.code, "invalid_request", "a body without the field is malformed");
  t.same((await retention()).body, { retention_days: 30, source: "config", default_retention_days: 30 });
  t.same(await eventsOf("audit.retention.updated"), [], "no event for a refused change");
});

t.test("non-admins get 403 on PUT retention and DELETE /audit, whatever they send", async (t) => {
  t.equal((await put({ retention_days: 1 }, operator)).status, 403);
  t.equal((await put("{not json", operator)).status, 403);
  const del = await call(gw.url, "DELETE", `/api/v1/audit?before=${new Date(now).toISOString()}`, { token: operator });
  t.equal(del.status, 403);
  t.equal(del.body.code, "admin_required");
  t.ok(await stored(aged.d40.id), "nothing deleted");
  // A bus caller that skips the gateway is refused by the service too.
  const client = rpcClient(nc, "audit", AuditService, { timeoutMs: 5000 });
  const err = await client
    .prune({ before: now }, { actor: { id: "x", name: "olga", type: "operator", role: "operator" } })
    .catch((e: unknown) => e);
  t.ok(err instanceof OrchError && err.code === "PERMISSION_DENIED");
});

t.test("PUT 7 sets the override once and records audit.retention.updated", async (t) => {
  const bus: AuditEvent[] = [];
  const sub = nc.subscribe("audit.audit.retention.updated", {
    callback: (_e, m) => void bus.push(fromBinary(AuditEventSchema, m.data)),
  });
  t.teardown(() => sub.unsubscribe());
  const r = await put({ retention_days: 7 });
  t.equal(r.status, 200);
  t.same(r.body, { retention_days: 7, source: "override", default_retention_days: 30 });
  t.same((await retention(operator)).body, r.body);
  const evs = await eventsOf("audit.retention.updated");
  t.equal(evs.length, 1, "visible as soon as the PUT returns");
  t.match(evs[0], {
    actor: { name: "admin", type: "operator" },
    target: { type: "audit" },
    metadata: {
      previous_override: null,
      override: 7,
      previous_retention_days: 30,
      retention_days: 7,
      source: "override",
    },
  });
  t.equal((await put({ retention_days: 7 })).status, 200);
  t.equal((await eventsOf("audit.retention.updated")).length, 1, "no event when nothing changed");
  await eventually(() => bus.length === 1, 10_000);
  t.equal(bus[0]!.id, evs[0]!.id, "the same event reached the bus");
  await new Promise((r) => setTimeout(r, 500));
  t.equal(
    (await reader.query("SELECT count(*)::int AS n FROM events WHERE id = $1", [evs[0]!.id])).rows[0].n,
    1,
    "stored once though it also came back from the stream",
  );
});

t.test("the retention job prunes under its advisory lock and records audit.pruned", async (t) => {
  const locker = new pg.Client({ connectionString: db.url });
  await locker.connect();
  await locker.query("SELECT pg_advisory_lock(hashtext('orch.job.audit.retention'))");
  t.equal(await stack.audit.svc.runRetention(), null, "another replica holds the lock: nothing done");
  t.ok(await stored(aged.d40.id));
  await locker.end();

  t.equal(await stack.audit.svc.runRetention(), 2, "40 and 20 days old are past 7 days");
  t.notOk(await stored(aged.d40.id));
  t.notOk(await stored(aged.d20.id));
  t.ok(await stored(aged.d5.id));
  const pruned = await eventsOf("audit.pruned");
  t.equal(pruned.length, 1);
  t.match(pruned[0], {
    actor: { id: "system", type: "system" },
    metadata: { deleted: 2, trigger: "retention", retention_days: 7 },
  });
  t.equal(await stack.audit.svc.runRetention(), 0, "nothing left to prune");
  t.equal((await eventsOf("audit.pruned")).length, 1, "an empty scheduled run records nothing");
});

t.test("DELETE /audit?before=: 400 on a bad cutoff; deletes strictly earlier; audit.pruned is kept", async (t) => {
  const before = await count();
  for (const qs of ["", "?before=", "?before=yesterday", "?before=2025-02-30T00:00:00Z", "?before=1700000000"]) {
    const r = await call(gw.url, "DELETE", `/api/v1/audit${qs}`, { token: admin });
    t.equal(r.status, 400, `${qs || "(none)"} → 400`);
    t.equal(r.body.code, "invalid_timestamp");
    t.equal(r.body.parameter, "before");
  }
  t.equal(await count(), before, "nothing deleted by a refused request");

  const exact = aged.d1.timestamp;
  const r = await call(gw.url, "DELETE", `/api/v1/audit?before=${exact}`, { token: admin });
  t.equal(r.status, 200);
  t.same(r.body, { deleted: 1 }, "only d5: the event at the cutoff itself is not earlier");
  t.ok(await stored(aged.d1.id));
  const pruned = await eventsOf("audit.pruned");
  t.equal(pruned.length, 2);
  t.match(pruned[0], {
    actor: { name: "admin", type: "operator" },
    metadata: { cutoff: exact, deleted: 1, trigger: "manual" },
  });

  // A cutoff in the future takes everything except the record of the prunes themselves.
  const all = await call(gw.url, "DELETE", `/api/v1/audit?before=${new Date(Date.now() + DAY).toISOString()}`, {
    token: admin,
  });
  t.equal(all.status, 200);
  t.ok(all.body.deleted >= 1);
  const left = await call(gw.url, "GET", "/api/v1/audit?limit=500", { token: admin });
  t.same(
    [...new Set(left.body.events.map((e: { event_type: string }) => e.event_type))],
    ["audit.pruned"],
    "only audit.pruned events remain",
  );
  t.equal(left.body.events.length, 3, "including the one this prune recorded, though it is earlier than the cutoff");
  t.equal(left.body.events[0].metadata.deleted, all.body.deleted);
});

t.test("DELETE removes the override: back to the configuration file", async (t) => {
  const r = await call(gw.url, "DELETE", "/api/v1/audit/retention", { token: admin });
  t.same(r.body, { retention_days: 30, source: "config", default_retention_days: 30 });
  const evs = await eventsOf("audit.retention.updated");
  t.equal(evs.length, 1, "the earlier one went with the prune of everything");
  t.match(evs[0], { metadata: { previous_override: 7, override: null, retention_days: 30, source: "config" } });
});

t.test("on the bus: returning to the configured default takes no retention_days", async (t) => {
  const client = rpcClient(nc, "audit", AuditService, { timeoutMs: 5000 });
  const err = await client
    .setRetention(
      { useConfigDefault: true, retentionDays: 7 },
      { actor: { id: "x", name: "ada", type: "operator", role: "admin" } },
    )
    .catch((e: unknown) => e);
  t.ok(err instanceof OrchError);
  t.equal((err as OrchError).reason, "invalid_retention");
  t.equal((err as OrchError).details.field, "retention_days");
  t.same((await retention()).body.source, "config", "nothing changed");
});

t.test("with audit.retention_days null in the configuration, null means pruning is off", async (t) => {
  await stack.restartAudit({ audit: { retention_days: null } });
  const old = event({ at: now - 400 * DAY });
  await publish([old]);
  await eventually(() => stored(old.id), 20_000);
  t.same((await retention()).body, { retention_days: null, source: "config", default_retention_days: null });
  t.equal(await stack.audit.svc.runRetention(), null, "off: the job does nothing");
  t.ok(await stored(old.id));
  t.same((await put({ retention_days: 365 })).body, {
    retention_days: 365,
    source: "override",
    default_retention_days: null,
  });
  t.equal(await stack.audit.svc.runRetention(), 1);
  t.notOk(await stored(old.id));
  t.same((await call(gw.url, "DELETE", "/api/v1/audit/retention", { token: admin })).body, {
    retention_days: null,
    source: "config",
    default_retention_days: null,
  });
  const evs = await eventsOf("audit.retention.updated");
  t.match(evs[0], {
    metadata: { previous_override: 365, override: null, previous_retention_days: 365, retention_days: null },
  });
});

t.test("the job runs on its own: shortly after start and then every interval", async (t) => {
  await stack.restartAudit({
    audit: { retention_days: 1, prune_start_delay_seconds: 0.1, prune_interval_minutes: 0.01 },
  });
  const old = event({ at: now - 2 * DAY });
  await publish([old]);
  await eventually(
    async () =>
      (await eventsOf("audit.pruned")).some(
        (e) => e.metadata.trigger === "retention" && e.metadata.retention_days === 1,
      ),
    20_000,
    100,
  );
  t.notOk(await stored(old.id), "the 2-day-old event is gone without anyone calling the job");
});

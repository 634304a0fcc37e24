import t from "tap";
import { eventually } from "@orch/kit/testing";
import { eventFactory } from "../../audit/test/harness.js";
import { parseAuditQuery } from "../src/routes/audit-query.js";
import { call } from "./harness.js";
import { startAuditApi } from "../../audit/test/api-stack.js";

// Two audit endpoints checked against the API contract: time filters whose `+hh:mm` offset arrives as a
// space, and PUT /audit/retention null = pruning off (DELETE returns to the configuration file).
const stack = await startAuditApi(t);
const { gw, admin, operator, publish, stored } = stack;
const event = eventFactory();

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** The same instant written with a +01:00 offset, as a client in Paris would. */
const plusOne = (ms: number) => new Date(ms + HOUR).toISOString().replace("Z", "+01:00");

t.test("unit: the offset read from a space is the value used (one parse)", async (t) => {
  const at = Date.parse("2025-01-31T11:00:00Z");
  for (const v of ["2025-01-31T12:00:00+01:00", "2025-01-31T12:00:00 01:00", "2025-01-31T12:00:00.000 01:00"]) {
    const q = parseAuditQuery({ after: v, before: v }, ["after", "before"]);
    t.equal(q.filter.after, at, `after=${v}`);
    t.equal(q.filter.before, at, `before=${v}`);
  }
  t.throws(() => parseAuditQuery({ after: "2025-01-31T12:00:00 1:00" }, ["after"]), { code: "INVALID_ARGUMENT" });
});

t.test("GET and DELETE /audit with an unencoded + offset: 200, filtered at the right instant", async (t) => {
  const base = Math.floor(Date.now() / HOUR) * HOUR - 3 * DAY;
  const early = event({ at: base - 30 * 60_000, type: "conformance.time" });
  const late = event({ at: base + 30 * 60_000, type: "conformance.time" });
  await publish([early, late]);
  await eventually(async () => (await stored(early.id)) && (await stored(late.id)), 20_000);

  // `+` is left unencoded on purpose: the query string decodes it to a space.
  const after = plusOne(base);
  t.match(after, /\+01:00$/);
  const r = await call(gw.url, "GET", `/api/v1/audit?event_type=conformance.time&after=${after}`, { token: admin });
  t.equal(r.status, 200, r.text);
  t.same(
    r.body.events.map((e: { id: string }) => e.id),
    [late.id],
    "only the event after base (a naive read of the local time would be an hour off and keep neither)",
  );
  const before = await call(gw.url, "GET", `/api/v1/audit?event_type=conformance.time&before=${after}`, {
    token: admin,
  });
  t.equal(before.status, 200, before.text);
  t.same(
    before.body.events.map((e: { id: string }) => e.id),
    [early.id],
  );

  const del = await call(gw.url, "DELETE", `/api/v1/audit?before=${plusOne(base - HOUR)}`, { token: admin });
  t.equal(del.status, 200, del.text);
  t.ok(await stored(early.id), "the cutoff is an hour before the earlier event: it stays");
});

const retention = (token = admin) => call(gw.url, "GET", "/api/v1/audit/retention", { token });
const put = (body: unknown, token = admin) => call(gw.url, "PUT", "/api/v1/audit/retention", { token, body });
const clear = (token = admin) => call(gw.url, "DELETE", "/api/v1/audit/retention", { token });
const updates = async () =>
  (await call(gw.url, "GET", "/api/v1/audit?event_type=audit.retention.updated&limit=500", { token: admin })).body
    .events as Array<Record<string, any>>;

t.test("PUT null turns pruning off even though the configuration file sets 30 days", async (t) => {
  const old = event({ at: Date.now() - 40 * DAY });
  await publish([old]);
  await eventually(() => stored(old.id), 20_000);

  const r = await put({ retention_days: null });
  t.equal(r.status, 200, r.text);
  t.same(r.body, { retention_days: null, source: "override", default_retention_days: 30 });
  t.same((await retention(operator)).body, r.body, "what GET reports afterwards");
  t.equal(await stack.audit.svc.runRetention(), null, "the retention job does nothing");
  t.ok(await stored(old.id), "a 40-day-old event is kept");
  const evs = await updates();
  t.equal(evs.length, 1);
  t.match(evs[0], {
    summary: /turned audit pruning off/,
    metadata: {
      previous_override: null,
      override: null,
      previous_source: "config",
      previous_retention_days: 30,
      retention_days: null,
      source: "override",
    },
  });
  t.same((await put({ retention_days: null })).body, r.body);
  t.equal((await updates()).length, 1, "turning it off again changes nothing and records nothing");
});

t.test("DELETE /audit/retention returns to the configuration file's value (admin only)", async (t) => {
  const refused = await clear(operator);
  t.equal(refused.status, 403);
  t.equal(refused.body.code, "admin_required");
  t.equal((await retention()).body.source, "override", "a refused DELETE changed nothing");

  const r = await clear();
  t.equal(r.status, 200, r.text);
  t.same(r.body, { retention_days: 30, source: "config", default_retention_days: 30 });
  const evs = await updates();
  t.equal(evs.length, 2);
  t.match(evs[0], {
    summary: /cleared the audit retention override \(now 30 days from the configuration file\)/,
    metadata: { previous_override: null, previous_source: "override", previous_retention_days: null, source: "config" },
  });
  t.ok((await stack.audit.svc.runRetention())! >= 1, "pruning resumes at the configured 30 days");

  t.same((await clear()).body, r.body, "DELETE without an override is a no-op");
  t.equal((await updates()).length, 2, "and records nothing");
});

t.test("0 is still refused on PUT (it is not a way to clear or disable)", async (t) => {
  const r = await put({ retention_days: 0 });
  t.equal(r.status, 400);
  t.equal(r.body.code, "invalid_retention");
  t.same((await retention()).body, { retention_days: 30, source: "config", default_retention_days: 30 });
  t.same((await put({ retention_days: 7 })).body, {
    retention_days: 7,
    source: "override",
    default_retention_days: 30,
  });
});

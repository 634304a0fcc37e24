import t from "tap";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, AuditFeedSchema } from "@orch/contracts";
import { OrchError } from "@orch/kit";
import { ulid } from "ulid";
import { matchesFilter, parseAuditQuery, parseRfc3339 } from "../../gateway/src/routes/audit-query.js";
import { encodeFeed } from "../src/feed.js";
import { parseCursor, parseFilter } from "../src/validate.js";
import { parseUlid, ulidFloor, ulidTime } from "../src/ulid-time.js";

// Pure logic of the audit service and its routes: id/time bounds, parameter validation, the
// live-feed encoding and the live-tail predicate.
const reason = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    if (err instanceof OrchError) return { reason: err.reason, ...err.details };
    throw err;
  }
  return undefined;
};

t.test("time bounds become id bounds that bracket every ULID of that millisecond", async (t) => {
  for (const ms of [1, 1_700_000_000_123, Date.now(), 2 ** 48 - 2]) {
    const floor = ulidFloor(ms);
    t.equal(ulidTime(floor), ms);
    for (let i = 0; i < 20; i++) {
      const id = ulid(ms);
      t.ok(floor <= id && id < ulidFloor(ms + 1), `${id} within [${floor}, next)`);
    }
  }
  t.equal(ulidFloor(-5), "0".repeat(26), "clamped below");
  t.equal(ulidFloor(1e20), ulidFloor(2 ** 48 - 1), "clamped above");
});

t.test("cursors are ULIDs (case-insensitive); anything else is invalid_cursor", async (t) => {
  const id = ulid();
  t.equal(parseUlid(id.toLowerCase()), id);
  t.equal(parseCursor("cursor", ""), undefined);
  for (const bad of [
    "x",
    `${id}0`,
    id.slice(1),
    "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
    "01ARZ3NDEKTSV4RRFFQ69G5FAU".replace("U", "I"),
  ]) {
    t.same(
      reason(() => parseCursor("cursor", bad)),
      { reason: "invalid_cursor", parameter: "cursor" },
      bad,
    );
  }
});

t.test("filter values are validated with the parameter named", async (t) => {
  t.same(parseFilter({ agent: "web-1", category: "agent.tags", after: 5 }), {
    agent: "web-1",
    category: "agent.tags",
    after: 5,
  });
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{ category: "agent." }, "invalid_filter", "category"],
    [{ category: ".agent" }, "invalid_filter", "category"],
    [{ eventType: "a b" }, "invalid_filter", "event_type"],
    [{ eventType: "x".repeat(129) }, "invalid_filter", "event_type"],
    [{ agent: "a\nb" }, "invalid_filter", "agent"],
    [{ operator: "o".repeat(257) }, "invalid_filter", "operator"],
    [{ after: Number.NaN }, "invalid_timestamp", "after"],
    [{ before: -1 }, "invalid_timestamp", "before"],
  ];
  for (const [f, code, parameter] of cases)
    t.same(
      reason(() => parseFilter(f)),
      { reason: code, parameter },
      JSON.stringify(f),
    );
});

t.test("RFC 3339 parsing is strict about calendars and lenient about a decoded '+'", async (t) => {
  t.equal(parseRfc3339("2024-02-29T00:00:00Z"), Date.UTC(2024, 1, 29));
  t.equal(parseRfc3339("2025-01-01T10:00:00+02:00"), Date.UTC(2025, 0, 1, 8));
  t.equal(parseRfc3339("2025-01-01T10:00:00 02:00"), Date.UTC(2025, 0, 1, 8), "'+' arrived as a space");
  t.equal(parseRfc3339("2025-01-01T10:00:00.5-05:30"), Date.UTC(2025, 0, 1, 15, 30, 0, 500));
  t.equal(parseRfc3339("2025-01-01t10:00z"), Date.UTC(2025, 0, 1, 10));
  for (const bad of [
    "2025-02-29T00:00:00Z",
    "2025-04-31T00:00:00Z",
    "2025-01-01T24:00:00Z",
    "2025-01-01T10:60:00Z",
    "2025-01-01",
    "1700000000",
    "2025-01-01T10:00:00+24:00",
    "yesterday",
  ]) {
    t.equal(parseRfc3339(bad), undefined, bad);
  }
});

t.test("query parameters: known ones once, non-empty; unknown ones refused", async (t) => {
  const all = ["agent", "operator", "event_type", "category", "after", "before", "cursor", "limit"];
  t.same(parseAuditQuery({ agent: "a", event_type: "x.y", limit: "10", cursor: ulidFloor(5).toLowerCase() }, all), {
    filter: { agent: "a", eventType: "x.y" },
    limit: 10,
    cursor: ulidFloor(5),
  });
  t.same(
    reason(() => parseAuditQuery({ limit: "0" }, all)),
    { reason: "invalid_limit", parameter: "limit" },
  );
  t.same(
    reason(() => parseAuditQuery({ limit: "00500" }, all)),
    { reason: "invalid_limit", parameter: "limit" },
    "no padding tricks past 4 digits",
  );
  t.same(
    reason(() => parseAuditQuery({ after: ["a", "b"] }, all)),
    { reason: "invalid_timestamp", parameter: "after" },
  );
  t.same(
    reason(() => parseAuditQuery({ category: "" }, all)),
    { reason: "invalid_filter", parameter: "category" },
  );
  t.same(
    reason(() => parseAuditQuery({ limit: "5" }, ["cursor"])),
    { reason: "invalid_filter", parameter: "limit" },
  );
});

t.test("the live-tail predicate", async (t) => {
  const ev = (type: string, actor: [string, string, string], target: [string, string, string], at = 1000) =>
    create(AuditEventSchema, {
      id: ulid(at),
      timestamp: new Date(at).toISOString(),
      eventType: type,
      actor: { id: actor[0], name: actor[1], type: actor[2] },
      target: { id: target[0], name: target[1], type: target[2] },
    });
  const byAgent = ev("agent.approved", ["o1", "alice", "operator"], ["n1", "web-1", "agent"]);
  t.ok(matchesFilter({ agent: "web-1" }, byAgent));
  t.ok(matchesFilter({ agent: "n1", operator: "alice", category: "agent" }, byAgent));
  t.notOk(matchesFilter({ operator: "web-1" }, byAgent));
  t.notOk(matchesFilter({ agent: "alice" }, byAgent), "alice is an operator, not an agent");
  t.notOk(matchesFilter({ category: "agen" }, byAgent));
  t.ok(matchesFilter({ category: "agent.approved" }, byAgent));
  t.notOk(matchesFilter({ agent: "web-1" }, ev("x.y", ["n1", "web-1", "host"], ["t", "t", "thing"])));
  const session = create(AuditEventSchema, {
    ...ev("terminal.session.opened", ["o1", "alice", "operator"], ["s1", "web-1", "terminal_session"]),
    metadata: { node_id: "n1", node_name: "web-1" },
  });
  t.ok(matchesFilter({ agent: "n1" }, session), "metadata node_id names the agent");
  t.ok(matchesFilter({ agent: "web-1" }, session), "metadata node_name names the agent");
  t.notOk(matchesFilter({ agent: "n2" }, session));
  t.notOk(
    matchesFilter({ agent: "n1" }, create(AuditEventSchema, { ...session, metadata: { operation_id: "n1" } })),
    "only the agent keys count",
  );
  t.ok(matchesFilter({ after: 1000, before: 1001 }, byAgent), "after inclusive");
  t.notOk(matchesFilter({ before: 1000 }, byAgent), "before exclusive");
});

t.test("the feed wraps the received bytes into a decodable AuditFeed", async (t) => {
  const events = [1, 2, 3].map((i) =>
    create(AuditEventSchema, {
      id: ulid(),
      eventType: `t.${i}`,
      summary: `s${i}`,
      metadata: { i, nested: { ok: true } },
    }),
  );
  const feed = fromBinary(
    AuditFeedSchema,
    encodeFeed(events.map((e, i) => ({ bytes: toBinary(AuditEventSchema, e), seq: 100 + i }))),
  );
  t.same(
    feed.events.map((s) => [s.seq, s.event?.id, s.event?.eventType, s.event?.metadata]),
    events.map((e, i) => [100 + i, e.id, e.eventType, { i: i + 1, nested: { ok: true } }]),
  );
});

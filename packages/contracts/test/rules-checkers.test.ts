import t from "tap";
import {
  ULID_48BIT_RE,
  ULID_RE,
  checkAgentName,
  checkRestriction,
  checkSecretValue,
  checkTags,
  type Violation,
} from "../src/index.js";

const NODE = "0123456789abcdef0123456789abcdef";

t.test("a name shaped like a node id is refused with the name's code", async (t) => {
  t.same(checkAgentName(NODE)?.reason, "invalid_name");
  t.equal(checkAgentName("web-1"), null);
  t.equal(checkAgentName(null)?.reason, "name_required");
});

t.test("a name the API's own agent routes use is refused (GET /agents/summary would shadow it)", async (t) => {
  t.same(checkAgentName("summary")?.reason, "invalid_name");
  t.match(checkAgentName("summary")?.message, /route of its own/);
  t.equal(checkAgentName("summary-1"), null);
});

t.test("ULID patterns: any ULID, and one whose time fits 48 bits", async (t) => {
  const max = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ";
  const beyond = "8ZZZZZZZZZZZZZZZZZZZZZZZZZ";
  t.ok(ULID_RE.test(max) && ULID_RE.test(beyond));
  t.ok(ULID_48BIT_RE.test(max));
  t.notOk(ULID_48BIT_RE.test(beyond), "a first character above 7 overflows 48 bits");
  t.notOk(ULID_RE.test("01ARZ3NDEKTSV4RRFFQ69G5FAI"), "I is not in the alphabet");
});

t.test("a tag map names the offending tag; the count is checked first", async (t) => {
  t.match(checkTags({ ok: "v", Bad: "x" }), { reason: "invalid_tag_key", field: "tags.Bad" });
  t.match(checkTags({ ok: "\u0001" }), { reason: "invalid_tag_value", field: "tags.ok" });
  const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`K${i}`, "v"]));
  t.match(checkTags(many), { reason: "too_many_tags", field: "tags" });
});

t.test("a restriction names the first bad node id by index and refuses an empty one", async (t) => {
  t.match(checkRestriction({ nodeIds: [NODE, "nope"], tags: {} }), {
    reason: "invalid_restriction",
    field: "restriction.node_ids.1",
  });
  t.equal(checkRestriction({ nodeIds: [NODE.toUpperCase()], tags: {} }), null, "node ids in any case");
  t.match(checkRestriction({ nodeIds: [], tags: {} }), { field: "restriction" });
  t.match(checkRestriction({ nodeIds: [], tags: { role: "\u0007" } }), { field: "restriction.tags.role" });
});

t.test("messages never repeat the input (a secret value must not come back)", async (t) => {
  const value = `sekrit-${"x".repeat(70_000)}`;
  const v = checkSecretValue(value) as Violation;
  t.equal(v.reason, "value_too_large");
  t.notMatch(v.message, /sekrit/);
  t.equal(checkSecretValue("\ud800sekrit")?.message.includes("sekrit"), false);
});

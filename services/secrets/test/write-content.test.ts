import t from "tap";
import { contentHash } from "@orch/contracts";
import { changedFields, frozenWrite, writeContent, writeSummary, type WritePlan } from "../src/write-content.js";

const plan = (o: Partial<WritePlan> = {}): WritePlan => ({
  op: "update",
  name: "db",
  valueChanged: true,
  changes: { description: "rotated" },
  baseVersion: "42",
  pendingId: "01PENDING",
  ...o,
});

t.test("the content names what changes and never a value", async (t) => {
  const c = writeContent(
    plan({
      changes: {
        description: null,
        expires_at: Date.UTC(2030, 0, 1),
        restriction: { node_ids: ["a"], tags: { env: "prod" } },
      },
    }),
  );
  t.same(c, {
    op: "update",
    name: "db",
    value_changed: true,
    base_version: "42",
    pending_id: "01PENDING",
    description: null,
    expires_at: "2030-01-01T00:00:00.000Z",
    restriction: { node_ids: ["a"], tags: { env: "prod" } },
  });
  t.notOk("value" in c, "no value field");
  t.same(Object.keys(writeContent(plan({ changes: {} }))).sort(), [
    "base_version",
    "name",
    "op",
    "pending_id",
    "value_changed",
  ]);
  t.equal(writeContent(plan({ changes: { expires_at: null } })).expires_at, null, "null clears the expiry");
});

t.test("the hash is the canonical content hash and binds every field", async (t) => {
  const f = frozenWrite(plan());
  t.equal(f.hash, contentHash(f.content));
  t.equal(frozenWrite(plan()).hash, f.hash, "stable");
  // What a round trip through a protobuf Struct and jsonb does (key order) changes nothing.
  t.equal(contentHash(JSON.parse(JSON.stringify({ ...f.content }))), f.hash);
  for (const other of [
    plan({ baseVersion: "43" }),
    plan({ pendingId: "01OTHER" }),
    plan({ valueChanged: false }),
    plan({ op: "delete" }),
    plan({ name: "db2" }),
    plan({ changes: { description: "other" } }),
    plan({ changes: { description: "rotated", restriction: null } }),
  ])
    t.not(frozenWrite(other).hash, f.hash);
});

t.test("summaries and changed fields read as people say them", async (t) => {
  t.equal(writeSummary("create", "db", true, { description: "x" }), "create secret db");
  t.equal(writeSummary("delete", "db", false, {}), "delete secret db");
  t.equal(writeSummary("update", "db", true, {}), "update secret db (value)");
  t.equal(writeSummary("update", "db", true, { description: "x" }), "update secret db (value and description)");
  t.equal(
    writeSummary("update", "db", false, { description: "x", expires_at: null, restriction: null }),
    "update secret db (description, expires_at and restriction)",
  );
  t.same(changedFields(true, { restriction: null }), ["value", "restriction"]);
});

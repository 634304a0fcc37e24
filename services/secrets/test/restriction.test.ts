// The resolution rule as a pure function; test/resolve.test.ts drives it through the RPC.
import t from "tap";
import { OrchError } from "@orch/kit";
import { decide, normaliseRestriction } from "../src/restriction.js";

const A = "a".repeat(32);
const B = "b".repeat(32);
const agent = (nodeId: string, tags: Record<string, string> = {}, status = "approved") => ({ nodeId, status, tags });

t.test("no restriction: any approved agent, no unapproved one", async (t) => {
  t.same(decide(null, agent(A)), { ok: true });
  t.same(decide(null, agent(A, {}, "pending")), { ok: false, reason: "agent_not_approved" });
  t.same(decide(null, agent(A, {}, "rejected")), { ok: false, reason: "agent_not_approved" });
});

t.test("node ids: listed → allowed, other → not permitted", async (t) => {
  const r = { node_ids: [A], tags: {} };
  t.same(decide(r, agent(A)), { ok: true });
  t.same(decide(r, agent(B)), { ok: false, reason: "secret_not_permitted" });
  t.same(
    decide(r, agent(A, {}, "rejected")),
    { ok: false, reason: "agent_not_approved" },
    "approval is checked even for a listed node",
  );
});

t.test("tags: every listed tag must be carried with the same value", async (t) => {
  const r = { node_ids: [], tags: { env: "prod", role: "db" } };
  t.same(decide(r, agent(B, { env: "prod", role: "db", extra: "x" })), { ok: true });
  t.same(decide(r, agent(B, { env: "prod" })), { ok: false, reason: "secret_not_permitted" });
  t.same(decide(r, agent(B, { env: "prod", role: "web" })), { ok: false, reason: "secret_not_permitted" });
  t.same(
    decide(r, agent(B, { env: "PROD", role: "db" })),
    { ok: false, reason: "secret_not_permitted" },
    "values match exactly",
  );
  t.same(
    decide({ node_ids: [], tags: { constructor: "x" } }, agent(B)),
    { ok: false, reason: "secret_not_permitted" },
    "no prototype keys",
  );
});

t.test("node ids OR tags; an empty tag list grants nothing by itself", async (t) => {
  const r = { node_ids: [A], tags: { env: "prod" } };
  t.same(decide(r, agent(A)), { ok: true }, "listed node without the tags");
  t.same(decide(r, agent(B, { env: "prod" })), { ok: true }, "unlisted node with the tags");
  t.same(decide(r, agent(B, { env: "dev" })), { ok: false, reason: "secret_not_permitted" });
  t.same(decide({ node_ids: [A], tags: {} }, agent(B, { env: "prod" })), { ok: false, reason: "secret_not_permitted" });
});

t.test("normalise: lower-cases, de-duplicates and sorts node ids; sorts tags", async (t) => {
  t.same(normaliseRestriction({ nodeIds: [B.toUpperCase(), A, B], tags: { z: "1", a: "2" } }), {
    node_ids: [A, B],
    tags: { a: "2", z: "1" },
  });
});

t.test("normalise refuses bad restrictions with invalid_restriction naming the field", async (t) => {
  const cases: Array<[Parameters<typeof normaliseRestriction>[0], string]> = [
    [{ nodeIds: [], tags: {} }, "restriction"],
    [{ nodeIds: [A, "web-1"], tags: {} }, "restriction.node_ids.1"],
    [{ nodeIds: [""], tags: {} }, "restriction.node_ids.0"],
    [{ nodeIds: [], tags: { "Bad Key": "x" } }, "restriction.tags.Bad Key"],
    [{ nodeIds: [], tags: { env: "x".repeat(256) } }, "restriction.tags.env"],
    [{ nodeIds: [], tags: { env: "a\nb" } }, "restriction.tags.env"],
    [{ nodeIds: Array.from({ length: 1001 }, () => A), tags: {} }, "restriction.node_ids"],
  ];
  for (const [input, field] of cases) {
    try {
      normaliseRestriction(input);
      t.fail(`accepted ${field}`);
    } catch (err) {
      t.ok(err instanceof OrchError);
      t.equal((err as OrchError).code, "INVALID_ARGUMENT");
      t.equal((err as OrchError).reason, "invalid_restriction");
      t.equal((err as OrchError).details.field, field);
    }
  }
});

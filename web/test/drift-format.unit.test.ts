import t from "tap";
import { compareAgents, driftSummary, pendingReasonText, sortAgents } from "../src/lib/agent-format.js";
import { operationBadge } from "../src/lib/operation-text.js";
import { agentCount, confirmsApply } from "../src/pages/assignments/apply-rules.js";

const agent = (name: string | null, node_id: string) => ({ name, node_id });

t.test("fleet order: by name (numbers in order), unnamed agents last by node id, ties by node id", async (t) => {
  const sorted = sortAgents([
    agent("web-10", "a1"),
    agent(null, "ff"),
    agent("db-1", "c3"),
    agent("web-2", "b2"),
    agent(null, "0a"),
    agent("web-2", "a0"),
  ]);
  t.same(
    sorted.map((a) => `${a.name ?? "-"}/${a.node_id}`),
    ["db-1/c3", "web-2/a0", "web-2/b2", "web-10/a1", "-/0a", "-/ff"],
  );
  t.equal(compareAgents(agent("a", "1"), agent("a", "1")), 0, "the same agent is equal to itself");
  const input = [agent("b", "2"), agent("a", "1")];
  sortAgents(input);
  t.same(
    input.map((a) => a.name),
    ["b", "a"],
    "the caller's array is left alone (it is the query's data)",
  );
  t.same(
    sortAgents([...sorted].reverse()).map((a) => a.node_id),
    sorted.map((a) => a.node_id),
    "any input order gives the same rows (a poll never reorders)",
  );
});

t.test("drift in one word: in sync, drifted (n), unknown", async (t) => {
  t.same(driftSummary({ drifted: false, resources: [] }), { text: "in sync", tone: "ok" });
  t.same(driftSummary({ drifted: true, resources: [{}, {}, {}] }), { text: "drifted (3)", tone: "warn" });
  t.same(driftSummary(null), { text: "unknown", tone: "neutral" }, "never checked");
  t.same(driftSummary(undefined), { text: "unknown", tone: "neutral" }, "not known yet");
});

t.test("a drift check that found drift is no green succeeded", async (t) => {
  t.same(operationBadge({ kind: "drift", status: "succeeded" }, true), { text: "drift found", warn: true });
  t.same(operationBadge({ kind: "drift", status: "succeeded" }, false), { text: "succeeded", warn: false });
  t.same(operationBadge({ kind: "drift", status: "succeeded" }, undefined), { text: "succeeded", warn: false });
  t.same(operationBadge({ kind: "drift", status: "timed_out" }, true), { text: "timed out", warn: false });
  t.same(operationBadge({ kind: "apply", status: "succeeded" }, true), { text: "succeeded", warn: false });
});

t.test("why a pending agent waits, for people", async (t) => {
  t.equal(pendingReasonText("join_token_revoked"), "join token revoked");
  t.equal(pendingReasonText("join_token_expired"), "join token expired");
  t.equal(pendingReasonText("join_token_exhausted"), "join token used up");
  t.equal(pendingReasonText("join_token_invalid"), "join token not recognised");
  t.equal(pendingReasonText("some_new_reason"), "some new reason", "a reason this console does not know yet");
  t.equal(pendingReasonText(null), "waiting for approval");
});

t.test("Apply asks first when it reaches more than one agent (or an unknown number)", async (t) => {
  t.same([0, 1, 2, 50].map(confirmsApply), [false, false, true, true]);
  t.equal(confirmsApply(undefined), true);
  t.equal(agentCount(1), "1 agent");
  t.equal(agentCount(3), "3 agents");
  t.equal(agentCount(undefined), "every agent the selector matches");
});

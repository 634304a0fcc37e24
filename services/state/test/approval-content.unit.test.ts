import t from "tap";
import { canonicalJson, frozenAgentApply, frozenApply } from "../src/approvals/apply-content.js";
import type { AssignmentRow } from "../src/db/catalog.js";
import type { AgentInfo } from "../src/deps.js";
import type { ModuleSource } from "../src/engine/render.js";

// The hash a change request's approval binds to: equal inputs hash equal, any input that decides
// what the apply changes hashes differently.
const assignment = {
  name: "web",
  selector: "env=prod",
  modules: ["site"],
  parameters: { port: 8080 },
} as unknown as AssignmentRow;
const source = (sha256: string) => ({ name: "site", sha256 }) as unknown as ModuleSource;
const agent = (nodeId: string, values?: Record<string, unknown>): AgentInfo => ({
  nodeId,
  name: `n-${nodeId}`,
  status: "approved",
  connected: true,
  tags: {},
  attributes: {},
  ...(values ? { values } : {}),
});
const rollout = { batch: "", maxFailures: null };
const base = frozenApply(assignment, [source("a1")], [agent("1", { x: 1 }), agent("2")], rollout);

t.test("canonical JSON sorts keys at every depth and drops undefined", async (t) => {
  t.equal(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: undefined } }), '{"a":{"d":[2,{"y":2,"z":1}]},"b":1}');
  t.equal(canonicalJson({ a: 1, b: 2 }), canonicalJson({ b: 2, a: 1 }));
});

t.test("the same inputs in another order hash the same", async (t) => {
  const again = frozenApply(assignment, [source("a1")], [agent("2"), agent("1", { x: 1 })], rollout);
  t.equal(again.hash, base.hash);
  t.same(
    again.content.targets.map((x) => x.node_id),
    ["1", "2"],
  );
  t.equal(base.content.targets[1]!.values_sha256, "", "an agent without rendered values");
});

t.test("each input that decides the apply changes the hash", async (t) => {
  const variants = {
    "a module version": frozenApply(assignment, [source("a2")], [agent("1", { x: 1 }), agent("2")], rollout),
    "an agent's values": frozenApply(assignment, [source("a1")], [agent("1", { x: 2 }), agent("2")], rollout),
    "the targets": frozenApply(assignment, [source("a1")], [agent("1", { x: 1 })], rollout),
    "the parameters": frozenApply(
      { ...assignment, parameters: { port: 8081 } },
      [source("a1")],
      [agent("1", { x: 1 }), agent("2")],
      rollout,
    ),
    "the selector": frozenApply(
      { ...assignment, selector: "*" },
      [source("a1")],
      [agent("1", { x: 1 }), agent("2")],
      rollout,
    ),
    "the rollout": frozenApply(assignment, [source("a1")], [agent("1", { x: 1 }), agent("2")], {
      batch: "1",
      maxFailures: 0,
    }),
  };
  for (const [what, v] of Object.entries(variants)) t.not(v.hash, base.hash, what);
});

t.test("an agent apply: the agent, each module version and its values decide the hash", async (t) => {
  const one = frozenAgentApply(agent("1", { x: 1 }), [source("a1")]);
  t.equal(frozenAgentApply(agent("1", { x: 1 }), [source("a1")]).hash, one.hash, "equal inputs, equal hash");
  t.same(one.content.modules, [{ name: "site", sha256: "a1" }]);
  t.equal(one.content.node_id, "1");
  const variants = {
    "another agent": frozenAgentApply(agent("2", { x: 1 }), [source("a1")]),
    "a module version": frozenAgentApply(agent("1", { x: 1 }), [source("a2")]),
    "its values": frozenAgentApply(agent("1", { x: 2 }), [source("a1")]),
    "no values": frozenAgentApply(agent("1"), [source("a1")]),
  };
  for (const [what, v] of Object.entries(variants)) t.not(v.hash, one.hash, what);
  t.equal(variants["no values"].content.values_sha256, "");
});

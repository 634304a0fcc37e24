import t from "tap";
import type { Agent } from "@orch/client";
import { ATTRIBUTE_COLUMNS, agentFields, agentLabel, attributeRows } from "../src/format/agents.js";
import { formatTable } from "../src/output.js";

const agent: Agent = {
  node_id: "0123456789abcdef0123456789abcdef",
  public_key: "ab".repeat(32),
  pending_reason: null,
  name: null,
  status: "approved",
  tags: { role: "web", env: "prod" },
  attributes: { os: "linux", arch: "amd64" },
  connected: true,
  first_seen: "2025-06-01T11:00:00.000Z",
  last_seen: null,
  address: "10.0.0.5",
  version: "1.2.3",
  outdated: false,
};

t.test("unit: agent details list every field, tags sorted and connected as yes/no", async (t) => {
  t.same(agentFields(agent), [
    ["name", null],
    ["node_id", "0123456789abcdef0123456789abcdef"],
    ["status", "approved"],
    ["connected", "yes"],
    ["address", "10.0.0.5"],
    ["version", "1.2.3"],
    ["first_seen", "2025-06-01T11:00:00.000Z"],
    ["last_seen", null],
    ["public_key", "ab".repeat(32)],
    ["tags", "env=prod,role=web"],
  ]);
});

t.test("unit: a pending agent's status carries why its join token did not approve it", async (t) => {
  const pending: Agent = { ...agent, status: "pending", pending_reason: "join_token_revoked" };
  t.same(agentFields(pending)[2], ["status", "pending (join_token_revoked)"]);
  t.same(agentFields({ ...pending, pending_reason: null })[2], ["status", "pending"]);
});

t.test("unit: attributes table is sorted by key", async (t) => {
  t.equal(
    formatTable(ATTRIBUTE_COLUMNS, attributeRows(agent.attributes)),
    "ATTRIBUTE  VALUE\narch       amd64\nos         linux\n",
  );
});

t.test("unit: an unnamed agent is labelled by its short id", async (t) => {
  t.equal(agentLabel(agent), "0123456789ab");
  t.equal(agentLabel({ ...agent, name: "web-1" }), "web-1");
});

import t from "tap";
import type { Operator, Whoami } from "@orch/client";
import {
  OPERATOR_COLUMNS,
  addedLine,
  operatorFields,
  operatorLine,
  operatorRows,
  scopeLine,
  whoamiFields,
} from "../src/format/operators.js";
import { formatTable } from "../src/output.js";

const alice: Operator = {
  id: "op-1",
  name: "alice",
  role: "admin",
  active: true,
  public_key: "ab".repeat(32),
  agent_selector: null,
  created_at: "2025-06-01T12:00:00.000Z",
  created_by: "root",
  source: "key",
  sso_rule: null,
};
const bob: Operator = {
  ...alice,
  id: "op-2",
  name: "bob",
  role: "operator",
  active: false,
  agent_selector: "env in (stage,test)",
};

t.test("unit: operators table shows the scope, (all agents) without a selector", async (t) => {
  t.equal(
    formatTable(OPERATOR_COLUMNS, operatorRows([alice, bob])),
    [
      "NAME   ID    ROLE      ACTIVE  SCOPE                CREATED",
      "alice  op-1  admin     yes     (all agents)         2025-06-01T12:00:00.000Z",
      "bob    op-2  operator  no      env in (stage,test)  2025-06-01T12:00:00.000Z",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(OPERATOR_COLUMNS, operatorRows([])), "NAME  ID  ROLE  ACTIVE  SCOPE  CREATED\n");
});

t.test("unit: operator and whoami fields", async (t) => {
  t.same(operatorFields(bob), [
    ["name", "bob"],
    ["id", "op-2"],
    ["role", "operator"],
    ["active", false],
    ["source", "key"],
    ["public_key", "ab".repeat(32)],
    ["agent_selector", "env in (stage,test)"],
    ["created_at", "2025-06-01T12:00:00.000Z"],
    ["created_by", "root"],
  ]);
  t.same(operatorFields({ ...bob, source: "sso:corp", sso_rule: "ops" })[4], ["source", "sso:corp (rule ops)"]);
  t.same(whoamiFields(alice as Whoami, "http://127.0.0.1:8080").at(-1), ["server", "http://127.0.0.1:8080"]);
  t.equal(whoamiFields(alice as Whoami, "x").length, 8);
});

t.test("unit: lines after add, scope and login", async (t) => {
  t.equal(addedLine(alice), "Added operator alice (admin), id op-1");
  t.equal(addedLine(bob), "Added operator bob (operator, scope 'env in (stage,test)'), id op-2");
  t.equal(scopeLine(alice), "Operator alice now reaches every agent");
  t.equal(scopeLine(bob), "Operator bob now reaches agents matching 'env in (stage,test)'");
  t.equal(operatorLine(alice), "alice (admin)");
});

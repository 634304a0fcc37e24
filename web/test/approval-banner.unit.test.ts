import t from "tap";
import { approvalsText, policiesHolding } from "../src/pages/parts/approval-rules.js";

t.test("who approves, in words", async (t) => {
  t.equal(approvalsText({ approvals_required: 1, approvers: ["role:admin"] }), "1 approval from role:admin");
  t.equal(
    approvalsText({ approvals_required: 2, approvers: ["operator:bob", "group:sre", "role:admin"] }),
    "2 approvals from operator:bob, group:sre or role:admin",
  );
  t.equal(approvalsText({ approvals_required: 1, approvers: [] }), "1 approval");
});

t.test("only the policies holding the action", async (t) => {
  const policies = [
    { name: "a", actions: ["assignment.apply"] },
    { name: "b", actions: ["access.request"] },
    { name: "c", actions: ["access.request", "agent.apply", "assignment.apply"] },
  ];
  t.same(
    policiesHolding(policies, "assignment.apply").map((p) => p.name),
    ["a", "c"],
  );
  t.same(
    policiesHolding(policies, "agent.apply").map((p) => p.name),
    ["c"],
  );
  t.same(policiesHolding(undefined, "agent.apply"), []);
});

import t from "tap";
import { readPolicyFile } from "../src/sources/policy-file.js";

const FILE = "approval-policies/prod.yaml";

t.test("a policy file becomes the PUT's fields, with each field's line", async (t) => {
  const r = readPolicyFile(
    FILE,
    "prod",
    [
      "description: prod",
      "actions: [assignment.apply]",
      "selector: env=prod",
      "approvals_required: 2",
      "approvers:",
      "  - role:admin",
      "requester_may_approve: true",
      "",
    ].join("\n"),
  );
  t.same(r.errors, []);
  t.same(r.policy?.policy, {
    name: "prod",
    description: "prod",
    actions: ["assignment.apply"],
    selector: "env=prod",
    approvalsRequired: 2,
    approvers: ["role:admin"],
    requesterMayApprove: true,
    expiresAfterSeconds: 0,
    maxAccessSeconds: 0,
  });
  t.same(r.policy?.at.approvals_required, { line: 4, column: 21 });
  t.equal(r.policy?.at.approvers?.line, 6, "a block list's position is its first item");
});

t.test("absent and empty keys take the API's defaults", async (t) => {
  const r = readPolicyFile(FILE, "prod", "actions: [agent.apply]\napprovers: ['role:admin']\nselector:\n");
  t.same(r.errors, []);
  t.equal(r.policy?.policy.selector, "");
  t.equal(r.policy?.policy.approvalsRequired, 0, "0: the auth service refuses it as the API does");
});

t.test("shape errors: every one, at its line", async (t) => {
  const r = readPolicyFile(
    FILE,
    "prod",
    ["actions: assignment.apply", "approvals_required: two", "approverz: [x]", "requester_may_approve: yes", ""].join(
      "\n",
    ),
  );
  t.same(
    r.errors.map((e) => [e.line, e.code, e.message]),
    [
      [1, "invalid_approval_policy", "actions must be a list of strings"],
      [2, "invalid_approval_policy", "approvals_required must be an integer"],
      [3, "invalid_approval_policy", "unknown field 'approverz'"],
      [4, "invalid_approval_policy", "requester_may_approve must be true or false"],
    ],
  );
  t.equal(r.policy, undefined);
});

t.test("a name must be the file's; bad YAML and a non-mapping are refused", async (t) => {
  t.equal(readPolicyFile(FILE, "prod", "name: staging\nactions: [agent.apply]\n").errors[0]?.code, "name_mismatch");
  t.equal(readPolicyFile(FILE, "prod", "actions: [agent.apply\n").errors[0]?.code, "invalid_yaml");
  t.equal(readPolicyFile(FILE, "prod", "- a\n- b\n").errors[0]?.code, "invalid_approval_policy");
  t.equal(
    readPolicyFile(FILE, "prod", "approvals_required: 99999999999\n").errors[0]?.message,
    "approvals_required must be an integer",
  );
});

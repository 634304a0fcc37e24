import t from "tap";
import { contentHash } from "@orch/contracts";
import { approvedOpen, frozenOpen } from "../src/approvals/content.js";
import { checkPass } from "../src/approvals/pass-check.js";
import type { PassRow } from "../src/db/passes.js";

t.test("a terminal.open freezes the agent and shell, hashed canonically", async (t) => {
  const f = frozenOpen({ nodeId: "n1", name: "web-1" }, "/bin/sh");
  t.same(f.content, { agent: { node_id: "n1", name: "web-1" }, shell: "/bin/sh" });
  t.equal(
    f.hash,
    contentHash({ shell: "/bin/sh", agent: { name: "web-1", node_id: "n1" } }),
    "key order is irrelevant",
  );
  t.not(frozenOpen({ nodeId: "n1", name: "web-2" }, "/bin/sh").hash, f.hash, "a renamed agent hashes differently");
  t.not(frozenOpen({ nodeId: "n1", name: "web-1" }, "").hash, f.hash, "another shell hashes differently");
  t.same(approvedOpen(f.content as unknown as Record<string, unknown>), { nodeId: "n1", shell: "/bin/sh" });
  t.same(approvedOpen({ agent: "x" }), { nodeId: "", shell: "" }, "malformed content names nothing");
  t.same(approvedOpen(undefined), { nodeId: "", shell: "" });
});

const pass: PassRow = {
  change_request_id: "cr1",
  node_id: "n1",
  node_name: "web-1",
  shell: "",
  operator_id: "alice",
  approvers: ["bob"],
  created_at: 1000,
  expires_at: 5000,
  used_at: null,
  session_id: null,
};
const use = { changeRequestId: "cr1", operatorId: "alice", nodeId: "n1", shell: "", now: 2000 };

t.test("a pass opens one terminal for its requester on its agent before it expires", async (t) => {
  t.equal(checkPass(pass, use), null);
  t.equal(checkPass({ ...pass, shell: "/bin/sh" }, { ...use, shell: "/bin/sh" }), null, "the approved shell");
  t.equal(checkPass({ ...pass, shell: "/bin/sh" }, use), null, "no shell asked: the approved one opens");
  const code = (p: PassRow | undefined, u = use) => checkPass(p, u)?.code;
  t.equal(code(undefined), "terminal_pass_invalid", "unknown");
  t.equal(code(pass, { ...use, operatorId: "carol" }), "terminal_pass_invalid", "someone else's");
  t.equal(code(pass, { ...use, nodeId: "n2" }), "terminal_pass_invalid", "another agent");
  t.equal(code(pass, { ...use, shell: "/bin/bash" }), "terminal_pass_invalid", "another shell");
  t.equal(code(pass, { ...use, now: 5000 }), "terminal_pass_invalid", "expired");
  t.equal(code({ ...pass, used_at: 1500, session_id: "s1" }), "terminal_pass_used", "used");
  t.equal(
    code({ ...pass, used_at: 1500 }, { ...use, operatorId: "carol" }),
    "terminal_pass_invalid",
    "a used pass of someone else's says nothing about its use",
  );
});

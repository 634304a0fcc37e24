import t from "tap";
import type { JsonObject } from "@bufbuild/protobuf";
import { OrchError, type Actor } from "@orch/kit";
import { startStack } from "./harness.js";

// The catalog.write executor on the real stack (NATS, Postgres, auth, state, gateway): an approved
// held write runs once however often (and however concurrently) the auth service asks, answers the
// recorded result again, and refuses content that names no held write. The auth side (approve,
// plan_changed keeping the request pending) is test/e2e/approvals-catalog.test.ts.
const s = await startStack(t);
const rpc = s.stateRpc;
const me = (await s.api("GET", "/auth/whoami")).body;
const admin: Actor = { id: me.id, name: me.name, type: "operator", role: "admin" };
const as = { actor: admin };

const moduleYaml = (name: string) =>
  `name: ${name}\nresources:\n  - id: f\n    type: file\n    path: /tmp/orch-once-${name}\n    content: 'x'\n`;
await rpc.uploadModule({ name: "m", content: moduleYaml("m") }, as);
await rpc.createAssignment({ name: "web", selector: "env=a", modules: ["m"] }, as);
const policy = await s.api("PUT", "/approval-policies/catalog", {
  actions: ["catalog.write"],
  selector: "*",
  approvals_required: 1,
  approvers: ["role:admin"],
});
if (policy.status !== 200) throw new Error(policy.text);

async function heldUpdate(selector: string) {
  const a = await rpc.updateAssignment({ name: "web", selector, modules: ["m"], reason: "test" }, as);
  if (!a.held?.changeRequestId) throw new Error("not held");
  const cr = (await s.api("GET", `/change-requests/${a.held.changeRequestId}`)).body;
  return {
    id: cr.id as string,
    action: "catalog.write",
    targetName: "web",
    contentHash: cr.content_hash as string,
    approvers: ["bob"],
    content: cr.content as JsonObject,
  };
}
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: unknown) => OrchError.from(e).reason,
  );

t.test("executed once: concurrent and retried executions answer the same result", async (t) => {
  const before = (await s.events("assignment.updated")).length;
  const req = await heldUpdate("env=b");
  t.equal((await rpc.getAssignment({ name: "web" }, as)).selector, "env=a", "held: unchanged");
  t.equal((await s.events("assignment.updated")).length, before, "the validating dry run recorded nothing");
  const [a, b] = await Promise.all([rpc.executeChangeRequest(req, as), rpc.executeChangeRequest(req, as)]);
  t.equal(a.result, "updated assignment web");
  t.equal(b.result, a.result);
  t.equal((await rpc.executeChangeRequest(req, as)).result, a.result, "a retry answers the recorded result");
  t.equal((await rpc.getAssignment({ name: "web" }, as)).selector, "env=b");
  const updated = (await s.events("assignment.updated")).filter(
    (e) => (e.metadata as Record<string, unknown>)?.change_request_id === req.id,
  );
  t.equal(updated.length, 1, "one write, one event");
  t.same((updated[0]!.metadata as Record<string, unknown>).approved_by, ["bob"]);
});

t.test("changed since it was held: plan_changed, and nothing is written", async (t) => {
  const req = await heldUpdate("env=c");
  await rpc.updateAssignment({ name: "web", selector: "env=d", modules: ["m"], breakGlass: true, reason: "now" }, as);
  t.equal(await codeOf(rpc.executeChangeRequest(req, as)), "plan_changed");
  t.equal((await rpc.getAssignment({ name: "web" }, as)).selector, "env=d");
});

t.test("content that names no held write is refused", async (t) => {
  const req = await heldUpdate("env=e");
  const content = { ...req.content, pending_id: "nope" };
  t.equal(await codeOf(rpc.executeChangeRequest({ ...req, content }, as)), "invalid_request");
  const tampered = { ...req.content, name: "other" };
  t.equal(await codeOf(rpc.executeChangeRequest({ ...req, content: tampered }, as)), "invalid_request");
  t.equal(await codeOf(rpc.executeChangeRequest({ ...req, contentHash: "0".repeat(64) }, as)), "invalid_request");
  t.equal((await rpc.getAssignment({ name: "web" }, as)).selector, "env=d", "nothing written");
});

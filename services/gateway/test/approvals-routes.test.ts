import t from "tap";
import { ApprovalService } from "@orch/contracts";
import { rpcClient, type Actor } from "@orch/kit";
import { createTestDatabase, ed25519, startNats } from "@orch/kit/testing";
import { call, login, startAuth, startGateway } from "./harness.js";

// /approval-policies (operators read, admins write) and /change-requests (operators) over HTTP
// against a real auth service: snake_case bodies, the problem codes, and admin-only policy writes.
const nats = await startNats();
const db = await createTestDatabase();
const adminKey = ed25519();
const auth = await startAuth(nats, db, adminKey);
const gw = await startGateway(nats);
t.teardown(async () => {
  await gw.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});

const admin = await login(gw.url, adminKey);
async function operator(name: string) {
  const key = ed25519();
  const res = await call(gw.url, "POST", "/api/v1/operators", {
    token: admin,
    body: { name, public_key: key.publicKeyHex },
  });
  if (res.status !== 201) throw new Error(`operator ${name}: ${res.text}`);
  const actor: Actor = { id: res.body.id, name, type: "operator", role: "operator" };
  return { token: await login(gw.url, key), actor };
}
const rita = await operator("rita");
const alice = await operator("alice");
const zed = await operator("zed");
const approvals = rpcClient(await nats.connect("state-like"), "auth", ApprovalService, { timeoutMs: 10_000 });

const body = {
  description: "prod applies",
  actions: ["assignment.apply"],
  selector: "env=prod",
  approvals_required: 1,
  approvers: ["operator:alice"],
};
const submit = () =>
  approvals.submitChangeRequest(
    {
      action: "assignment.apply",
      targetType: "assignment",
      targetName: "web",
      summary: "apply web to 1 agent",
      reason: "release",
      content: { plan: [{ agent: "n1", diff: "+ nginx 1.27" }] },
      contentHash: "sha256:1",
      agents: [{ id: "n1", name: "web-1", tags: { env: "prod" }, attributes: {} }],
    },
    { actor: rita.actor },
  );

t.test("approval policies: operators read, admins write, snake_case, validation codes", async (t) => {
  const put = await call(gw.url, "PUT", "/api/v1/approval-policies/prod-apply", { token: admin, body });
  t.equal(put.status, 200, put.text);
  t.match(put.body, {
    name: "prod-apply",
    approvals_required: 1,
    expires_after_seconds: 86_400,
    requester_may_approve: false,
  });
  const refused = await call(gw.url, "PUT", "/api/v1/approval-policies/prod-apply", { token: rita.token, body });
  t.equal(refused.status, 403);
  t.equal(refused.body.code, "admin_required");
  // Every operator reads the policies (what is held, who approves); only an admin writes them.
  const read = await call(gw.url, "GET", "/api/v1/approval-policies", { token: rita.token });
  t.equal(read.status, 200, read.text);
  t.same(
    read.body.policies.map((p: { name: string; selector: string }) => [p.name, p.selector]),
    [["prod-apply", "env=prod"]],
  );
  const one = await call(gw.url, "GET", "/api/v1/approval-policies/prod-apply", { token: rita.token });
  t.equal(one.status, 200, one.text);
  t.same(one.body.approvers, ["operator:alice"]);
  const gone = await call(gw.url, "DELETE", "/api/v1/approval-policies/prod-apply", { token: rita.token });
  t.equal(gone.status, 403);
  t.equal(gone.body.code, "admin_required");
  const list = await call(gw.url, "GET", "/api/v1/approval-policies?limit=10", { token: admin });
  t.same(
    list.body.policies.map((p: { name: string }) => p.name),
    ["prod-apply"],
  );
  t.equal(list.body.next_cursor, null);
  t.equal(
    (await call(gw.url, "GET", "/api/v1/approval-policies/prod-apply", { token: admin })).body.selector,
    "env=prod",
  );
  const zero = await call(gw.url, "PUT", "/api/v1/approval-policies/bad", {
    token: admin,
    body: { ...body, approvals_required: 0 },
  });
  t.equal(zero.status, 400);
  t.equal(zero.body.code, "invalid_approval_policy");
  const nobody = await call(gw.url, "PUT", "/api/v1/approval-policies/bad", {
    token: admin,
    body: { ...body, approvers: ["group:unheard-of"] },
  });
  t.equal(nobody.status, 400);
  t.equal(nobody.body.code, "unknown_approver");
  const missing = await call(gw.url, "GET", "/api/v1/approval-policies/none", { token: admin });
  t.equal(missing.status, 404);
  t.equal(missing.body.code, "approval_policy_not_found");
});

t.test("change requests: list, get, approve, deny, cancel with their codes", async (t) => {
  const r = await submit();
  const toApprove = await call(gw.url, "GET", "/api/v1/change-requests?to_approve=true", { token: alice.token });
  t.same(
    toApprove.body.requests.map((x: { id: string }) => x.id),
    [r.id],
  );
  t.same(
    (await call(gw.url, "GET", "/api/v1/change-requests?to_approve=true", { token: zed.token })).body.requests,
    [],
  );
  const mine = await call(gw.url, "GET", "/api/v1/change-requests?mine=true&status=pending", { token: rita.token });
  t.equal(mine.body.requests.length, 1);
  const one = await call(gw.url, "GET", `/api/v1/change-requests/${r.id}`, { token: zed.token });
  t.match(one.body, {
    id: r.id,
    status: "pending",
    requester: { name: "rita" },
    content: { plan: [{ agent: "n1" }] },
    decided_at: null,
    result: null,
  });
  const approve = (token: string, id = r.id) =>
    call(gw.url, "POST", `/api/v1/change-requests/${id}/approve`, { token, body: { comment: "lgtm" } });
  t.match(await approve(rita.token), { status: 403, body: { code: "own_change_request" } });
  t.match(await approve(zed.token), { status: 403, body: { code: "not_an_approver" } });
  const ok = await approve(alice.token);
  t.equal(ok.status, 200, ok.text);
  t.equal(ok.body.status, "approved", "no executor in this auth service: approved, waiting for its service");
  t.match(ok.body.decisions, [{ operator_name: "alice", decision: "approve", comment: "lgtm" }]);
  t.match(await approve(alice.token), { status: 409, body: { code: "change_request_not_pending" } });
  const d = await submit();
  const denied = await call(gw.url, "POST", `/api/v1/change-requests/${d.id}/deny`, { token: alice.token, body: {} });
  t.equal(denied.body.status, "denied");
  const c = await submit();
  const notYours = await call(gw.url, "POST", `/api/v1/change-requests/${c.id}/cancel`, { token: zed.token, body: {} });
  t.match(notYours, { status: 403, body: { code: "not_change_requester" } });
  const cancelled = await call(gw.url, "POST", `/api/v1/change-requests/${c.id}/cancel`, {
    token: rita.token,
    body: { comment: "later" },
  });
  t.equal(cancelled.body.status, "cancelled");
  const gone = await call(gw.url, "GET", "/api/v1/change-requests/01J00000000000000000000000", { token: zed.token });
  t.match(gone, { status: 404, body: { code: "change_request_not_found" } });
  const page = await call(gw.url, "GET", "/api/v1/change-requests?limit=2", { token: zed.token });
  t.equal(page.body.requests.length, 2);
  t.equal(page.body.has_more, true);
  const rest = await call(gw.url, "GET", `/api/v1/change-requests?limit=2&cursor=${page.body.next_cursor}`, {
    token: zed.token,
  });
  t.same(
    rest.body.requests.map((x: { id: string }) => x.id),
    [r.id],
  );
  const del = await call(gw.url, "DELETE", "/api/v1/approval-policies/prod-apply", { token: admin });
  t.equal(del.status, 204);
});

import t from "tap";
import { ApprovalService } from "@orch/contracts";
import { precondition, rpcClient, type Actor } from "@orch/kit";
import { eventually, type NatsHandle } from "@orch/kit/testing";
import { approvalsContext, startExpiry, type ApproverRef } from "../src/approvals/index.js";
import type { RequestRow } from "../src/approvals/requests-db.js";
import { authTestbed, manualClock, startAuth } from "./harness.js";
import { auditObserver, eventsOf, meta, reasonOf } from "./sso-helpers.js";

// Approval policies and change requests against a real Postgres and NATS: policy validation,
// evaluation, the request lifecycle with an executor injected by the test, races between two
// replicas, and expiry. Operators: boss (admin), rita (requester), alice and bob (approvers), zed
// (bystander), dana (approver through the SSO group `dba`).
const clock = manualClock();
let mode: "ok" | "plan_changed" | "boom" = "ok";
const executed: { request: RequestRow; approvers: ApproverRef[] }[] = [];
const executors = {
  "assignment.apply": async (request: RequestRow, approvers: ApproverRef[]) => {
    if (mode === "plan_changed") throw precondition("plan_changed", "the targets changed");
    if (mode === "boom") throw new Error("the state service is gone");
    executed.push({ request, approvers });
    return { result: `run-${executed.length}` };
  },
};
const {
  nats,
  db,
  admin: adminKey,
  auth,
  addOperator,
} = await authTestbed(t, {
  clock,
  // The service's own expiry job stays out of the way; the test ticks a job of its own.
  auth: { approvals_expiry_interval_seconds: 86_400 * 365 },
  options: { executors },
});
const bus = await auditObserver(nats);
const approvals = async (n: NatsHandle, name = "approvals-client") =>
  rpcClient(await n.connect(name), "auth", ApprovalService, { timeoutMs: 20_000 });
const api = await approvals(nats);
const pool = auth.deps.pool;
const { actor: boss } = await addOperator("boss", "admin");
const { actor: rita } = await addOperator("rita");
const { actor: alice } = await addOperator("alice");
const { actor: bob } = await addOperator("bob");
const { actor: zed } = await addOperator("zed");
const { actor: dana } = await addOperator("dana");

// An SSO provider whose rule names the group `dba`, and dana's identity carrying it.
const now = Date.now();
await pool.query(
  `INSERT INTO identity_providers (id, name, display_name, issuer, client_id, scopes, groups_claim, rules, refresh_interval_seconds, created_at, updated_at, created_by)
   VALUES ('P1', 'corp', 'Corp', 'https://idp.example', 'c', '{openid}', 'groups', $1, 0, $2, $2, 'system')`,
  [JSON.stringify([{ name: "dbas", groups: ["dba"], role: "operator", agent_selector: "" }]), now],
);
await pool.query(
  `INSERT INTO sso_identities (operator_id, provider_id, subject, groups, rule_index, rule_name, provisioned_at, last_login_at, checked_at)
   VALUES ($1, 'P1', 'dana', '{dba}', 0, 'dbas', $2, $2, $2)`,
  [dana.id, now],
);

const policy = (name: string, o: Record<string, unknown> = {}) => ({
  name,
  description: "",
  actions: ["assignment.apply"],
  selector: "env=prod",
  approvalsRequired: 1,
  approvers: ["operator:alice", "operator:bob"],
  requesterMayApprove: false,
  expiresAfterSeconds: 0,
  ...o,
});
type AgentRef = { id: string; name: string; tags: Record<string, string>; attributes: Record<string, string> };
const prod: AgentRef[] = [{ id: "n1", name: "web-1", tags: { env: "prod" }, attributes: { os: "linux" } }];
const submit = (o: Record<string, unknown> = {}, as: Actor = rita) =>
  api.submitChangeRequest(
    {
      action: "assignment.apply",
      targetType: "run",
      targetName: "uptime",
      summary: "run uptime on prod",
      reason: "check",
      content: { argv: ["uptime"], targets: ["n1"] },
      contentHash: "sha256:abc",
      agents: prod,
      ...o,
    },
    { actor: as },
  );
const statusOf = async (id: string) => (await api.getChangeRequest({ id }, { actor: zed })).status;

t.test("policies: put, get, list with pagination, update, delete; admin writes, operators read; events", async (t) => {
  const p = await api.putApprovalPolicy(policy("aaa", { description: "first" }), { actor: boss });
  t.equal(p.selector, "env=prod");
  t.equal(p.expiresAfterSeconds, 86_400, "default expiry");
  t.equal(p.createdBy, boss.id);
  await api.putApprovalPolicy(policy("bbb"), { actor: boss });
  const first = await api.listApprovalPolicies({ limit: 1 }, { actor: boss });
  t.same(
    first.policies.map((x) => x.name),
    ["aaa"],
  );
  const second = await api.listApprovalPolicies({ limit: 1, cursor: first.nextCursor }, { actor: boss });
  t.same(
    second.policies.map((x) => x.name),
    ["bbb"],
  );
  t.equal(second.nextCursor, "");
  const changed = await api.putApprovalPolicy(policy("aaa", { approvalsRequired: 2 }), { actor: boss });
  t.equal(changed.approvalsRequired, 2);
  t.equal(changed.createdAt, p.createdAt);
  t.equal((await api.getApprovalPolicy({ name: "aaa" }, { actor: boss })).approvalsRequired, 2);
  await api.deleteApprovalPolicy({ name: "aaa" }, { actor: boss });
  await api.deleteApprovalPolicy({ name: "bbb" }, { actor: boss });
  t.equal(
    await reasonOf(api.getApprovalPolicy({ name: "aaa" }, { actor: boss })),
    "NOT_FOUND/approval_policy_not_found",
  );
  t.equal(
    await reasonOf(api.deleteApprovalPolicy({ name: "aaa" }, { actor: boss })),
    "NOT_FOUND/approval_policy_not_found",
  );
  t.equal(await reasonOf(api.putApprovalPolicy(policy("x"), { actor: rita })), "PERMISSION_DENIED/admin_required");
  t.equal(await reasonOf(api.deleteApprovalPolicy({ name: "x" }, { actor: rita })), "PERMISSION_DENIED/admin_required");
  // Every operator reads them: what is held and who approves.
  t.equal(await reasonOf(api.listApprovalPolicies({}, { actor: rita })), "ok");
  t.ok(await eventsOf(bus, "approval_policy.created", (m) => (m.approvers as string[]).includes("operator:alice")));
  t.ok(await eventsOf(bus, "approval_policy.updated"));
  const deleted = await eventually(() => {
    const evs = bus.events.filter((e) => e.eventType === "approval_policy.deleted");
    return evs.length >= 2 ? evs : undefined;
  });
  t.same(deleted.map((e) => e.target?.name).sort(), ["aaa", "bbb"]);
});

t.test("policies: every validation code", async (t) => {
  const put = (o: Record<string, unknown>) => reasonOf(api.putApprovalPolicy(policy("bad", o), { actor: boss }));
  const bad = "INVALID_ARGUMENT/invalid_approval_policy";
  t.equal(await put({ approvalsRequired: 0 }), bad, "0 approvals");
  t.equal(await put({ approvalsRequired: 11 }), bad, "11 approvals");
  t.equal(await put({ actions: ["rm.rf"] }), bad, "unknown action");
  t.equal(await put({ actions: [] }), bad, "no action");
  t.equal(await put({ selector: "env in (" }), bad, "bad selector");
  t.equal(await put({ approvers: [] }), bad, "no approvers");
  t.equal(await put({ expiresAfterSeconds: 59 }), bad, "expiry too short");
  t.equal(await put({ expiresAfterSeconds: 2_592_001 }), bad, "expiry too long");
  t.equal(
    await reasonOf(api.putApprovalPolicy(policy("Bad Name"), { actor: boss })),
    "INVALID_ARGUMENT/invalid_request",
  );
  const unknown = "INVALID_ARGUMENT/unknown_approver";
  t.equal(await put({ approvers: ["operator:nobody"] }), unknown, "no such operator");
  t.equal(await put({ approvers: ["role:root"] }), unknown, "no such role");
  t.equal(await put({ approvers: ["group:nobody-mentions-it"] }), unknown, "unknown group");
  t.equal(await put({ approvers: ["alice"] }), unknown, "no kind");
  t.equal(await put({ approvers: ["group:dba", "role:admin", "role:operator"] }), "ok", "known group and roles");
  await api.deleteApprovalPolicy({ name: "bad" }, { actor: boss });
  t.equal((await pool.query("SELECT count(*)::int AS n FROM approval_policies")).rows[0].n, 0, "nothing stored");
});

t.test("evaluate: match, no match, the strictest wins, agentless actions match `*` only", async (t) => {
  await api.putApprovalPolicy(policy("one", { approvers: ["operator:alice"] }), { actor: boss });
  await api.putApprovalPolicy(policy("two", { approvalsRequired: 2, selector: "attr.os=linux" }), { actor: boss });
  await api.putApprovalPolicy(policy("also-two", { approvalsRequired: 2 }), { actor: boss });
  const ev = (action: string, agents: AgentRef[]) => api.evaluateApproval({ action, agents }, { actor: rita });
  t.equal((await ev("access.request", prod)).required, false, "action not covered");
  await api.putApprovalPolicy(policy("secrets", { actions: ["access.request"], selector: "*" }), { actor: boss });
  await api.putApprovalPolicy(policy("scoped-secrets", { actions: ["access.request"] }), { actor: boss });
  const hit = await ev("assignment.apply", prod);
  t.same([hit.required, hit.policy, hit.approvalsRequired, hit.expiresAfterSeconds], [true, "also-two", 2, 86_400]);
  const staging = [{ id: "n2", name: "web-2", tags: { env: "staging" }, attributes: {} }];
  t.equal((await ev("assignment.apply", staging)).required, false);
  t.equal((await ev("assignment.apply", [...staging, ...prod])).policy, "also-two", "one matching agent is enough");
  t.equal((await ev("access.request", [])).policy, "secrets");
  t.equal(await reasonOf(ev("rm.rf", prod)), "INVALID_ARGUMENT/invalid_request");
  for (const n of ["two", "also-two", "secrets", "scoped-secrets"])
    await api.deleteApprovalPolicy({ name: n }, { actor: boss });
  const only = await ev("assignment.apply", prod);
  t.same(
    [only.policy, only.approverIds],
    ["one", [alice.id]],
    "the active operators who may approve (break-glass notifies them)",
  );
});

t.test("submit: pending, notify ids, refused without a policy", async (t) => {
  await api.putApprovalPolicy(policy("one", { approvers: ["operator:alice", "group:dba", "operator:rita"] }), {
    actor: boss,
  });
  t.equal(
    await reasonOf(submit({ agents: [{ id: "n2", name: "x", tags: { env: "dev" }, attributes: {} }] })),
    "FAILED_PRECONDITION/approval_not_required",
  );
  const r = await submit();
  t.equal(r.status, "pending");
  t.equal(r.policy, "one");
  t.same(r.requester, { $typeName: "orch.v1.ChangeRequester", id: rita.id, name: "rita" });
  t.equal(r.expiresAt - r.createdAt, 86_400_000);
  t.same(r.content, { argv: ["uptime"], targets: ["n1"] });
  const [created] = await eventsOf(bus, "change_request.created", (m) => m.policy === "one");
  t.same((meta(created!).notify_operator_ids as string[]).sort(), [alice.id, dana.id].sort(), "the requester left out");
  t.equal(created!.actor?.name, "rita");
  const mine = await api.listChangeRequests({ mine: true }, { actor: rita });
  t.same(
    mine.requests.map((x) => x.id),
    [r.id],
  );
  t.same(
    (await api.listChangeRequests({ toApprove: true }, { actor: alice })).requests.map((x) => x.id),
    [r.id],
  );
  t.same(
    (await api.listChangeRequests({ toApprove: true }, { actor: dana })).requests.map((x) => x.id),
    [r.id],
  );
  t.same((await api.listChangeRequests({ toApprove: true }, { actor: zed })).requests, [], "bystander");
  t.same((await api.listChangeRequests({ toApprove: true }, { actor: rita })).requests, [], "own request");
  t.equal(
    await reasonOf(api.listChangeRequests({ status: "odd" }, { actor: zed })),
    "INVALID_ARGUMENT/invalid_request",
  );
  await api.cancelChangeRequest({ id: r.id, comment: "" }, { actor: rita });
});

t.test("approve: refused for bystanders, the requester and twice; executes once with the approvers", async (t) => {
  await api.putApprovalPolicy(policy("one", { approvalsRequired: 2 }), { actor: boss });
  const r = await submit();
  const decide = (actor: Actor) => reasonOf(api.approveChangeRequest({ id: r.id, comment: "ok" }, { actor }));
  t.equal(await decide(zed), "PERMISSION_DENIED/not_an_approver");
  await api.putApprovalPolicy(
    policy("one", { approvalsRequired: 2, approvers: ["operator:alice", "operator:bob", "operator:zed"] }),
    {
      actor: boss,
    },
  );
  t.equal(await decide(zed), "PERMISSION_DENIED/not_an_approver", "the request froze the approvers");
  t.equal(await decide(rita), "PERMISSION_DENIED/own_change_request");
  t.equal(await decide(alice), "ok");
  t.equal(await decide(alice), "FAILED_PRECONDITION/already_decided");
  t.equal(await statusOf(r.id), "pending");
  t.ok(await eventsOf(bus, "change_request.approval_recorded", (m) => m.approvals === 1));
  t.equal(await decide(bob), "ok");
  const done = await api.getChangeRequest({ id: r.id }, { actor: zed });
  t.equal(done.status, "executed");
  t.equal(done.result, "run-1");
  t.same(
    done.decisions.map((d) => [d.operatorName, d.decision, d.comment]),
    [
      ["alice", "approve", "ok"],
      ["bob", "approve", "ok"],
    ],
  );
  t.equal(executed.length, 1);
  t.same(
    executed[0]!.approvers.map((a) => a.name),
    ["alice", "bob"],
  );
  const [ev] = await eventsOf(bus, "change_request.executed", (m) => m.result === "run-1");
  t.same(meta(ev!).requester, { id: rita.id, name: "rita" });
  t.same(
    (meta(ev!).approvers as ApproverRef[]).map((a) => a.name),
    ["alice", "bob"],
  );
  t.equal(ev!.actor?.name, "rita", "executed as the requester");
  t.ok(await eventsOf(bus, "change_request.approved", (m) => (m.approvers as unknown[]).length === 2));
  t.equal(await decide(alice), "FAILED_PRECONDITION/change_request_not_pending");
});

t.test("own request: refused unless the policy allows it", async (t) => {
  await api.putApprovalPolicy(policy("one", { approvers: ["role:operator"] }), { actor: boss });
  const r = await submit();
  t.equal(
    await reasonOf(api.approveChangeRequest({ id: r.id, comment: "" }, { actor: rita })),
    "PERMISSION_DENIED/own_change_request",
  );
  await api.putApprovalPolicy(policy("one", { approvers: ["role:operator"], requesterMayApprove: true }), {
    actor: boss,
  });
  const own = await submit();
  t.equal((await api.approveChangeRequest({ id: own.id, comment: "" }, { actor: rita })).status, "executed");
  await api.cancelChangeRequest({ id: r.id, comment: "" }, { actor: rita });
});

t.test("plan_changed: the approval is refused and not recorded; any other error fails the request", async (t) => {
  await api.putApprovalPolicy(policy("one"), { actor: boss });
  const r = await submit();
  mode = "plan_changed";
  t.equal(
    await reasonOf(api.approveChangeRequest({ id: r.id, comment: "" }, { actor: alice })),
    "FAILED_PRECONDITION/plan_changed",
  );
  const still = await api.getChangeRequest({ id: r.id }, { actor: zed });
  t.equal(still.status, "pending");
  t.same(still.decisions, [], "no approval recorded");
  mode = "boom";
  const failed = await api.approveChangeRequest({ id: r.id, comment: "" }, { actor: alice });
  t.equal(failed.status, "failed");
  t.match(failed.error, /state service is gone/);
  t.ok(await eventsOf(bus, "change_request.failed", (m) => m.error === failed.error));
  mode = "ok";
});

t.test("deny ends the request; cancel by the requester or an admin only", async (t) => {
  await api.putApprovalPolicy(policy("one", { approvalsRequired: 2 }), { actor: boss });
  const r = await submit();
  t.equal(
    await reasonOf(api.denyChangeRequest({ id: r.id, comment: "no" }, { actor: zed })),
    "PERMISSION_DENIED/not_an_approver",
  );
  const denied = await api.denyChangeRequest({ id: r.id, comment: "not today" }, { actor: bob });
  t.equal(denied.status, "denied");
  t.ok(await eventsOf(bus, "change_request.denied", (m) => m.comment === "not today"));
  const c = await submit();
  t.equal(
    await reasonOf(api.cancelChangeRequest({ id: c.id, comment: "" }, { actor: alice })),
    "PERMISSION_DENIED/not_change_requester",
  );
  t.equal((await api.cancelChangeRequest({ id: c.id, comment: "oops" }, { actor: rita })).status, "cancelled");
  const d = await submit();
  t.equal((await api.cancelChangeRequest({ id: d.id, comment: "" }, { actor: boss })).status, "cancelled");
  t.ok(await eventsOf(bus, "change_request.cancelled", (m) => m.comment === "oops"));
  t.equal(
    await reasonOf(api.cancelChangeRequest({ id: d.id, comment: "" }, { actor: rita })),
    "FAILED_PRECONDITION/change_request_not_pending",
  );
  t.equal(
    await reasonOf(api.getChangeRequest({ id: "01J00000000000000000000000" }, { actor: zed })),
    "NOT_FOUND/change_request_not_found",
  );
});

t.test("two replicas racing approve and deny: exactly one wins", async (t) => {
  const replica = await startAuth(
    nats,
    db,
    adminKey,
    clock,
    { approvals_expiry_interval_seconds: 86_400 * 365 },
    { executors },
  );
  t.teardown(() => replica.stop());
  const other = await approvals(nats, "approvals-client-2");
  await api.putApprovalPolicy(policy("one"), { actor: boss });
  for (let i = 0; i < 5; i++) {
    const r = await submit();
    const outcomes = await Promise.all([
      reasonOf(api.approveChangeRequest({ id: r.id, comment: "" }, { actor: alice })),
      reasonOf(other.denyChangeRequest({ id: r.id, comment: "" }, { actor: bob })),
    ]);
    t.same(outcomes.filter((o) => o === "ok").length, 1, `round ${i}: ${outcomes.join(", ")}`);
    t.ok(outcomes.includes("FAILED_PRECONDITION/change_request_not_pending"));
    const final = await api.getChangeRequest({ id: r.id }, { actor: zed });
    t.equal(final.decisions.length, 1, "one decision recorded");
    t.ok(["executed", "denied"].includes(final.status));
  }
});

t.test("expiry: approving after it is refused and expires the request; the job expires the rest", async (t) => {
  await api.putApprovalPolicy(policy("one", { expiresAfterSeconds: 60 }), { actor: boss });
  const late = await submit();
  const idle = await submit();
  clock.advance(61_000);
  t.equal(
    await reasonOf(api.approveChangeRequest({ id: late.id, comment: "" }, { actor: alice })),
    "FAILED_PRECONDITION/change_request_expired",
  );
  t.equal(await statusOf(late.id), "expired");
  t.ok(await eventsOf(bus, "change_request.expired", (m) => (m.requester as { name: string }).name === "rita"));
  t.equal(await statusOf(idle.id), "pending", "not yet seen by the job");
  const deps = auth.deps;
  const job = startExpiry(
    approvalsContext({
      ...deps,
      config: { ...deps.config, auth: { ...deps.config.auth, approvals_expiry_interval_seconds: 1 } },
    }),
  );
  t.teardown(() => job.stop());
  t.equal(await job.tick(), true, "the job ran");
  t.equal(await statusOf(idle.id), "expired");
  const expired = await eventually(() => {
    const evs = bus.events.filter((e) => e.eventType === "change_request.expired" && e.target?.id === idle.id);
    return evs.length ? evs : undefined;
  });
  t.equal(expired.length, 1, "one event for the request the job expired");
  t.equal(
    await reasonOf(api.approveChangeRequest({ id: idle.id, comment: "" }, { actor: alice })),
    "FAILED_PRECONDITION/change_request_not_pending",
  );
});

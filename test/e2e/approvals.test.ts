import t, { type Test } from "tap";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ed25519, eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

// Four-eyes applies (docs/approvals.md) with real processes (auth, agents, secrets, notify, audit,
// state, gateway), real orch-agents tagged env=prod and env=dev, and three operators: a requester, an
// approver and a bystander. A policy holds applies to env=prod for one approver. Needs `npm run build`.
const { system, agents, linkPort, dir } = await startStateStack(t, {
  name: "approvals",
  keyByte: 37,
  extraServices: ["notify", "audit"],
  env: { ORCH_NOTIFY_CREDENTIALS_KEYS: `k1:${Buffer.alloc(32, 38).toString("base64")}` },
});

type Res = Awaited<ReturnType<typeof system.api>>;
const as = (token: string) => (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: Promise<Res>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};
const problem = (t: Test, r: Res, status: number, code: string) => {
  t.equal(r.status, status, `status ${status}`);
  t.equal(r.body?.code, code, `code ${code}`);
};

const admin = as(await system.login(system.admin));
async function operator(name: string) {
  const key = ed25519();
  const op = await must(admin("POST", "/operators", { name, public_key: key.publicKeyHex, role: "operator" }), 201);
  return { id: op.id as string, api: as(await system.login(key)) };
}
const alice = await operator("alice"); // requests
const bob = await operator("bob"); // approves
const carol = await operator("carol"); // looks on

const server = `127.0.0.1:${linkPort}`;
const prodAgent = agents.spawn(["--server", server]);
const devAgent = agents.spawn(["--server", server]);
const prod = await prodAgent.nodeId();
const dev = await devAgent.nodeId();
for (const [id, name, env] of [
  [prod, "prod-1", "prod"],
  [dev, "dev-1", "dev"],
] as const) {
  await eventually(async () => (await admin("GET", `/agents/${id}`)).body?.connected === true, 20_000);
  await must(admin("POST", `/agents/${id}`, { status: "approved", name }), 200);
  await must(admin("PUT", `/agents/${id}/tags`, { tags: { env } }), 200);
}

const conf = (env: string) => join(dir, `${env}.conf`);
// One module per environment: both agents run on this machine, so each writes its own file.
const putModule = (content: string, env = "prod") =>
  admin("POST", "/modules", {
    name: `site-${env}`,
    content: [
      `name: site-${env}`,
      "resources:",
      `  - { id: conf, type: file, path: '${conf(env)}', content: "${content}\\n" }`,
      "",
    ].join("\n"),
  });
await must(putModule("v1"), 201);
await must(putModule("v1", "dev"), 201);
await must(admin("POST", "/assignments", { name: "web", selector: "env=prod", modules: ["site-prod"] }), 201);
await must(admin("POST", "/assignments", { name: "web-dev", selector: "env=dev", modules: ["site-dev"] }), 201);
await must(
  admin("PUT", "/approval-policies/prod-applies", {
    actions: ["assignment.apply"],
    selector: "env=prod",
    approvals_required: 1,
    approvers: ["operator:bob"],
    expires_after_seconds: 3600,
  }),
  200,
);

const events = async (type: string) =>
  (await must(admin("GET", `/audit?event_type=${type}&limit=100`), 200)).events as any[];
const inbox = async (api: typeof admin) =>
  (await must(api("GET", "/notifications?limit=200"), 200)).notifications as any[];
const held = async (reason = "roll out v1") => {
  const run = await must(alice.api("POST", "/assignments/web/apply?wait=30", { reason }), 202);
  t.ok(run.change_request_id, "the apply became a change request");
  return run;
};

t.test("an apply outside every policy runs at once", async (t) => {
  const run = await must(alice.api("POST", "/assignments/web-dev/apply?wait=30"), 200);
  t.equal(run.status, "completed");
  t.notOk(run.change_request_id);
  t.equal(readFileSync(conf("dev"), "utf8"), "v1\n");
});

let first: any;
t.test("an apply to env=prod is held as a pending change request with its plan", async (t) => {
  const run = await held();
  t.equal(run.kind, "plan", "what comes back is the plan of what the apply would do");
  t.equal(run.status, "completed");
  t.same(
    run.operations.map((o: any) => o.name),
    ["prod-1"],
  );
  t.notOk(existsSync(conf("prod")), "nothing was applied");
  first = await must(alice.api("GET", `/change-requests/${run.change_request_id}`), 200);
  t.equal(first.status, "pending");
  t.equal(first.action, "assignment.apply");
  t.equal(first.policy, "prod-applies");
  t.equal(first.reason, "roll out v1");
  t.equal(first.content.plan_run_id, run.run_id);
  t.same(
    first.content.targets.map((x: any) => x.name),
    ["prod-1"],
  );
  // The approver reads the per-agent diff from the plan's operation.
  const op = await must(bob.api("GET", `/agents/${prod}/state/operations/${run.operations[0].operation_id}`), 200);
  t.match(JSON.stringify(op), /conf/, "the plan names the file it would change");
  const created = await eventually(async () =>
    (await events("change_request.created")).find((e) => e.target.id === first.id),
  );
  t.same(created.metadata.notify_operator_ids, [bob.id]);
  await eventually(async () => (await inbox(bob.api)).some((n) => n.event_type === "change_request.created"));
  t.notOk(
    (await inbox(carol.api)).some((n) => n.event_type === "change_request.created"),
    "only the approvers are asked",
  );
});

t.test("the requester and a bystander cannot approve", async (t) => {
  problem(t, await alice.api("POST", `/change-requests/${first.id}/approve`, {}), 403, "own_change_request");
  problem(t, await carol.api("POST", `/change-requests/${first.id}/approve`, {}), 403, "not_an_approver");
  t.notOk(existsSync(conf("prod")));
});

t.test("the approver approves: it executes once, as the requester, with the approver recorded", async (t) => {
  const cr = await must(bob.api("POST", `/change-requests/${first.id}/approve`, { comment: "diff looks right" }), 200);
  t.equal(cr.status, "executed");
  t.ok(cr.result, "names the run it started");
  await eventually(() => existsSync(conf("prod")) && readFileSync(conf("prod"), "utf8") === "v1\n", 30_000);
  const applied = await eventually(async () =>
    (await events("assignment.applied")).find((e) => e.metadata.run_id === cr.result),
  );
  t.equal(applied.actor.name, "alice", "executed under the requester's identity");
  t.equal(applied.metadata.change_request_id, first.id);
  t.same(applied.metadata.approved_by, ["bob"]);
  const executed = await eventually(async () =>
    (await events("change_request.executed")).find((e) => e.target.id === first.id),
  );
  t.match(JSON.stringify(executed.metadata), /alice/);
  t.match(JSON.stringify(executed.metadata), /bob/);
  problem(t, await bob.api("POST", `/change-requests/${first.id}/approve`, {}), 409, "change_request_not_pending");
  const runs = (await must(admin("GET", "/assignments/web/runs?limit=50"), 200)).runs as any[];
  t.equal(runs.filter((r) => r.kind === "apply").length, 1, "executed once");
});

t.test("a module changed after the request: approval refused with plan_changed; re-planned, it executes", async (t) => {
  const stale = (await held("roll out v2")).change_request_id;
  const before = await must(bob.api("GET", `/change-requests/${stale}`), 200);
  await must(putModule("v3"), 201);
  problem(t, await bob.api("POST", `/change-requests/${stale}/approve`, {}), 409, "plan_changed");
  t.equal((await must(bob.api("GET", `/change-requests/${stale}`), 200)).status, "pending", "still pending");
  t.equal(readFileSync(conf("prod"), "utf8"), "v1\n", "nothing executed");

  problem(t, await carol.api("POST", `/change-requests/${stale}/replan`, {}), 403, "not_change_requester");
  const replanned = await must(alice.api("POST", `/change-requests/${stale}/replan`, { comment: "v3 now" }), 200);
  t.equal(replanned.id, stale, "the same request");
  t.equal(replanned.status, "pending", "it needs approval again");
  t.not(replanned.content_hash, before.content_hash, "bound to the new content");
  t.not(replanned.content.plan_run_id, before.content.plan_run_id, "with a fresh plan");
  t.equal(replanned.reason, "roll out v2", "the reason stays");
  const event = await eventually(async () =>
    (await events("change_request.replanned")).find((e) => e.target.id === stale),
  );
  t.equal(event.actor.name, "alice");
  t.equal(event.metadata.previous_content_hash, before.content_hash);
  t.same(event.metadata.notify_operator_ids, [bob.id], "the approvers are asked again");
  const plan = await must(admin("GET", `/assignments/web/runs/${replanned.content.plan_run_id}`), 200);
  t.equal(plan.kind, "plan");

  const done = await must(bob.api("POST", `/change-requests/${stale}/approve`, {}), 200);
  t.equal(done.status, "executed");
  await eventually(() => readFileSync(conf("prod"), "utf8") === "v3\n", 30_000);
  problem(t, await alice.api("POST", `/change-requests/${stale}/replan`, {}), 409, "change_request_not_pending");
});

t.test("break-glass: admins only, with a reason, audited as critical, approvers notified", async (t) => {
  await must(putModule("v4"), 201);
  problem(
    t,
    await alice.api("POST", "/assignments/web/apply", { break_glass: true, reason: "outage" }),
    403,
    "break_glass_forbidden",
  );
  problem(t, await admin("POST", "/assignments/web/apply", { break_glass: true }), 400, "break_glass_reason_required");
  problem(
    t,
    await admin("POST", "/assignments/web/apply", { break_glass: true, reason: "   " }),
    400,
    "break_glass_reason_required",
  );
  t.equal(readFileSync(conf("prod"), "utf8"), "v3\n", "refused attempts changed nothing");
  const run = await must(admin("POST", "/assignments/web/apply?wait=30", { break_glass: true, reason: "outage" }), 200);
  t.equal(run.kind, "apply");
  t.notOk(run.change_request_id);
  t.equal(readFileSync(conf("prod"), "utf8"), "v4\n");
  const bypassed = await eventually(async () => (await events("approval.bypassed"))[0]);
  t.equal(bypassed.severity, "critical");
  t.equal(bypassed.metadata.reason, "outage");
  t.equal(bypassed.metadata.policy, "prod-applies");
  await eventually(async () => (await inbox(bob.api)).some((n) => n.event_type === "approval.bypassed"));
  t.notOk(
    (await inbox(carol.api)).some((n) => n.event_type === "approval.bypassed"),
    "addressed to the approvers",
  );
});

t.test("agent applies: held by an agent.apply policy with the agent's plan, executed once on approval", async (t) => {
  await must(putModule("v5"), 201);
  const direct = await must(alice.api("POST", `/agents/${dev}/apply?wait=30`, { modules: ["site-dev"] }), 200);
  t.notOk(direct.change_request_id, "no policy holds agent applies yet");
  await must(
    admin("PUT", "/approval-policies/prod-agent-applies", {
      actions: ["agent.apply"],
      selector: "env=prod",
      approvals_required: 1,
      approvers: ["operator:bob"],
    }),
    200,
  );
  const again = await must(alice.api("POST", `/agents/${dev}/apply?wait=30`, { modules: ["site-dev"] }), 200);
  t.notOk(again.change_request_id, "an agent outside the policy's selector is not held");

  const plan = await must(
    alice.api("POST", `/agents/${prod}/apply?wait=30`, { modules: ["site-prod"], reason: "hotfix" }),
    202,
  );
  t.equal(plan.kind, "plan", "what comes back is the plan of what the apply would do");
  t.equal(plan.status, "succeeded");
  t.ok(plan.change_request_id);
  t.ok(
    plan.results.some((r: any) => r.id === "conf" && r.changed),
    "the plan shows the file it would change",
  );
  t.equal(readFileSync(conf("prod"), "utf8"), "v4\n", "nothing was applied");
  const cr = await must(bob.api("GET", `/change-requests/${plan.change_request_id}`), 200);
  t.equal(cr.action, "agent.apply");
  t.equal(cr.policy, "prod-agent-applies");
  t.equal(cr.target_type, "agent");
  t.equal(cr.content.node_id, prod);
  t.equal(cr.content.plan_operation_id, plan.id);
  problem(t, await alice.api("POST", `/change-requests/${cr.id}/approve`, {}), 403, "own_change_request");

  const done = await must(bob.api("POST", `/change-requests/${cr.id}/approve`, {}), 200);
  t.equal(done.status, "executed");
  const op = await eventually(async () => {
    const o = (await must(admin("GET", `/state/operations/${done.result}`), 200)) as any;
    return o.status === "succeeded" ? o : undefined;
  }, 30_000);
  t.equal(op.kind, "apply");
  t.equal(op.actor.name, "alice", "executed under the requester's identity");
  t.equal(op.change_request_id, cr.id);
  t.equal(readFileSync(conf("prod"), "utf8"), "v5\n");
  const succeeded = await eventually(async () =>
    (await events("state.apply.succeeded")).find((e) => e.metadata.operation_id === op.id),
  );
  t.equal(succeeded.metadata.change_request_id, cr.id);
  problem(t, await bob.api("POST", `/change-requests/${cr.id}/approve`, {}), 409, "change_request_not_pending");

  // Approval binds the content: a module changed since the request refuses it.
  await must(putModule("v6"), 201);
  const stale = (
    await must(alice.api("POST", `/agents/${prod}/apply?wait=30`, { modules: ["site-prod"], reason: "v6" }), 202)
  ).change_request_id;
  await must(putModule("v7"), 201);
  problem(t, await bob.api("POST", `/change-requests/${stale}/approve`, {}), 409, "plan_changed");
  t.equal(readFileSync(conf("prod"), "utf8"), "v5\n", "nothing executed");
  const replanned = await must(alice.api("POST", `/change-requests/${stale}/replan`, {}), 200);
  t.not(replanned.content.plan_operation_id, undefined);
  const replan = await must(admin("GET", `/state/operations/${replanned.content.plan_operation_id}`), 200);
  t.equal(replan.kind, "plan", "a fresh plan of the agent");
  t.equal((await must(bob.api("POST", `/change-requests/${stale}/approve`, {}), 200)).status, "executed");
  await eventually(() => readFileSync(conf("prod"), "utf8") === "v7\n", 30_000);

  problem(
    t,
    await alice.api("POST", `/agents/${prod}/apply`, { modules: ["site-prod"], break_glass: true, reason: "outage" }),
    403,
    "break_glass_forbidden",
  );
  const forced = await must(
    admin("POST", `/agents/${prod}/apply?wait=30`, { modules: ["site-prod"], break_glass: true, reason: "outage" }),
    200,
  );
  t.equal(forced.kind, "apply");
  t.equal(readFileSync(conf("prod"), "utf8"), "v7\n", "break-glass applied at once");
  const bypass = await eventually(async () =>
    (await events("approval.bypassed")).find((e) => e.metadata.action === "agent.apply"),
  );
  t.equal(bypass.target.id, prod);
});

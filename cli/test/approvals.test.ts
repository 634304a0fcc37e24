import type { IncomingMessage, ServerResponse } from "node:http";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import t, { type Test } from "tap";
import { APPROVAL_ACTIONS } from "@orch/contracts";
import { cli } from "./helpers/cli.js";
import type { TestOperator, TestServer } from "./helpers/server.js";
import { loggedIn } from "./helpers/setup.js";

// orchctl approval-policies, requests and `assignments apply --reason/--break-glass` against the
// in-test API (helpers/server.ts), which here plays the gateway's approval routes: policies
// validated like the auth service, an apply a policy covers answering 202 with the plan run and
// `change_request_id`, the request decided as docs/approvals.md says.

const send = (res: ServerResponse, status: number, body?: unknown) => {
  res.writeHead(status, body === undefined ? {} : { "content-type": "application/json" });
  res.end(body === undefined ? undefined : JSON.stringify(body));
};
const problem = (res: ServerResponse, status: number, code: string, detail: string, extra: object = {}) => {
  res.writeHead(status, { "content-type": "application/problem+json" });
  res.end(
    JSON.stringify({ type: `https://orch.example/problems/${code}`, title: code, status, detail, code, ...extra }),
  );
};
const bodyOf = (s: TestServer) => (s.requests.at(-1)?.body ?? {}) as Record<string, unknown>;
const callerOf = (s: TestServer, req: IncomingMessage): TestOperator => {
  const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1] ?? "";
  const id = s.tokens.get(token)?.operatorId;
  return s.operators.find((o) => o.id === id)!;
};

const ACTIONS: readonly string[] = APPROVAL_ACTIONS;

const run = (kind: "apply" | "plan", id: string, status: string, extra: object = {}) => ({
  run_id: id,
  assignment: "web",
  kind,
  status,
  selector: "env=prod",
  modules: ["motd"],
  batch_size: 2,
  batches: 1,
  max_failures: null,
  failures: 0,
  created_at: "2026-11-30T10:00:00.000Z",
  finished_at: status === "running" ? null : "2026-11-30T10:00:05.000Z",
  started_by: "op",
  source: null,
  commit: null,
  operations: [
    {
      operation_id: kind === "plan" ? "op-plan-a" : null,
      node_id: "node-a",
      name: "web-1",
      batch: 0,
      status: "succeeded",
    },
    {
      operation_id: kind === "plan" ? "op-plan-b" : null,
      node_id: "node-b",
      name: "web-2",
      batch: 0,
      status: "succeeded",
    },
  ],
  ...extra,
});

/** The approval routes of the gateway, as far as these tests go. */
function approvalsApi(s: TestServer) {
  const policies = new Map<string, Record<string, unknown>>();
  const requests = new Map<string, Record<string, unknown> & { decisions: Record<string, unknown>[] }>();
  const O = s.overrides;
  const admin = (req: IncomingMessage, res: ServerResponse) => {
    if (callerOf(s, req).role === "admin") return true;
    problem(res, 403, "admin_required", "this operation requires the admin role");
    return false;
  };
  const policyRoutes = (name: string) => {
    const p = `/api/v1/approval-policies/${name}`;
    O.set(`PUT ${p}`, (req, res) => {
      if (!admin(req, res)) return;
      const b = bodyOf(s);
      const n = b.approvals_required as number;
      if (!Number.isInteger(n) || n < 1 || n > 10)
        return problem(res, 400, "invalid_approval_policy", "approvals_required must be 1..10", {
          field: "approvals_required",
        });
      if (!Array.isArray(b.actions) || !b.actions.length || b.actions.some((a) => !ACTIONS.includes(a)))
        return problem(res, 400, "invalid_approval_policy", "unknown or missing action", { field: "actions" });
      for (const a of b.approvers as string[]) {
        const m = /^operator:(.+)$/.exec(a);
        if (m && !s.operators.some((o) => o.name === m[1]))
          return problem(res, 400, "unknown_approver", `no operator ${m[1]}`);
      }
      const now = "2026-11-30T09:00:00.000Z";
      const stored = {
        name,
        description: (b.description as string) ?? "",
        actions: b.actions,
        selector: (b.selector as string) ?? "*",
        approvals_required: n,
        approvers: b.approvers,
        requester_may_approve: (b.requester_may_approve as boolean) ?? false,
        expires_after_seconds: (b.expires_after_seconds as number) ?? 86400,
        created_at: (policies.get(name)?.created_at as string) ?? now,
        updated_at: now,
        created_by: callerOf(s, req).id,
      };
      policies.set(name, stored);
      send(res, 200, stored);
    });
    O.set(`GET ${p}`, (_req, res) => {
      const found = policies.get(name);
      if (!found) return problem(res, 404, "approval_policy_not_found", `no approval policy ${name}`);
      send(res, 200, found);
    });
    O.set(`DELETE ${p}`, (req, res) => {
      if (!admin(req, res)) return;
      if (!policies.delete(name)) return problem(res, 404, "approval_policy_not_found", `no approval policy ${name}`);
      send(res, 204);
    });
  };
  for (const name of ["prod", "bad", "flags"]) policyRoutes(name);
  O.set("GET /api/v1/approval-policies", (_req, res) => {
    send(res, 200, { policies: [...policies.values()], has_more: false, next_cursor: null });
  });

  const mayDecide = (r: Record<string, unknown>, op: TestOperator) =>
    (r.requester as { id: string }).id !== op.id && op.role === "admin";
  O.set("POST /api/v1/assignments/web/apply", (req, res) => {
    const b = bodyOf(s);
    const me = callerOf(s, req);
    const policy = [...policies.values()].find((p) => (p.actions as string[]).includes("assignment.apply"));
    if (b.break_glass) {
      if (me.role !== "admin") return problem(res, 403, "break_glass_forbidden", "break-glass is for admins");
      return send(res, 200, run("apply", "run-bg-1", "completed"));
    }
    if (!policy) return send(res, 200, run("apply", "run-apply-0", "completed"));
    const id = `cr-${requests.size + 1}`;
    requests.set(id, {
      id,
      action: "assignment.apply",
      status: "pending",
      policy: policy.name,
      approvals_required: policy.approvals_required,
      requester: { id: me.id, name: me.name },
      target_type: "assignment",
      target_name: "web",
      summary: "apply web (motd) on 2 agents",
      reason: (b.reason as string) ?? "",
      content: {
        assignment: "web",
        selector: "env=prod",
        modules: [{ name: "motd", sha256: "ab".repeat(32) }],
        parameters: {},
        batch: "",
        max_failures: null,
        targets: [
          { node_id: "node-a", name: "web-1", values_sha256: "" },
          { node_id: "node-b", name: "web-2", values_sha256: "" },
        ],
        plan_run_id: "run-plan-1",
      },
      content_hash: "cd".repeat(32),
      decisions: [],
      created_at: "2026-11-30T10:00:00.000Z",
      expires_at: "2026-12-01T10:00:00.000Z",
      decided_at: null,
      executed_at: null,
      result: null,
      error: null,
    });
    for (const verb of ["approve", "deny", "cancel"])
      O.set(`POST /api/v1/change-requests/${id}/${verb}`, (q, r2) => {
        const cr = requests.get(id)!;
        const op = callerOf(s, q);
        if (cr.status !== "pending")
          return problem(r2, 409, "change_request_not_pending", `change request ${id} is ${cr.status}`);
        if (verb === "cancel") {
          if ((cr.requester as { id: string }).id !== op.id && op.role !== "admin")
            return problem(r2, 403, "not_change_requester", "only the requester or an admin may cancel");
          cr.status = "cancelled";
          return send(r2, 200, cr);
        }
        if ((cr.requester as { id: string }).id === op.id)
          return problem(r2, 403, "own_change_request", "you may not decide your own change request");
        if (!mayDecide(cr, op)) return problem(r2, 403, "not_an_approver", "you are not among the approvers");
        const comment = (bodyOf(s).comment as string) ?? "";
        cr.decisions.push({
          operator_id: op.id,
          operator_name: op.name,
          decision: verb,
          comment,
          at: "2026-11-30T10:05:00.000Z",
        });
        cr.decided_at = "2026-11-30T10:05:00.000Z";
        if (verb === "deny") cr.status = "denied";
        else {
          cr.status = "executed";
          cr.executed_at = "2026-11-30T10:05:01.000Z";
          cr.result = "run-apply-9";
        }
        send(r2, 200, cr);
      });
    O.set(`POST /api/v1/change-requests/${id}/replan`, (q, r2) => {
      const cr = requests.get(id)!;
      const op = callerOf(s, q);
      if ((cr.requester as { id: string }).id !== op.id && op.role !== "admin")
        return problem(r2, 403, "not_change_requester", "only the requester or an admin may re-plan");
      if (cr.status !== "pending")
        return problem(r2, 409, "change_request_not_pending", `change request ${id} is ${cr.status}`);
      cr.content_hash = "ef".repeat(32);
      cr.summary = "apply assignment web on 3 agents";
      send(r2, 200, cr);
    });
    O.set(`GET /api/v1/change-requests/${id}`, (_q, r2) => send(r2, 200, requests.get(id)));
    send(res, 202, { ...run("plan", "run-plan-1", "running"), change_request_id: id });
  });
  O.set("GET /api/v1/assignments/web/runs/run-plan-1", (_q, res) =>
    send(res, 200, run("plan", "run-plan-1", "completed")),
  );
  O.set("GET /api/v1/change-requests", (req, res) => {
    const me = callerOf(s, req);
    const q = new URL(req.url ?? "/", "http://x").searchParams;
    const list = [...requests.values()]
      .filter((r) => !q.get("status") || r.status === q.get("status"))
      .filter((r) => q.get("mine") !== "true" || (r.requester as { id: string }).id === me.id)
      .filter((r) => q.get("to_approve") !== "true" || (r.status === "pending" && mayDecide(r, me)))
      .reverse();
    send(res, 200, { requests: list, has_more: false, next_cursor: null });
  });
  O.set("GET /api/v1/change-requests/nope", (_q, res) =>
    problem(res, 404, "change_request_not_found", "no change request nope"),
  );
  return { policies, requests };
}

/** alice (operator, the requester) logged in; bob (admin, the approver) in a second orchctl home. */
async function twoOperators(t: Test) {
  const alice = await loggedIn(t, "operator");
  const bobHome = join(alice.env.HOME, "bob");
  const bobEnv = { HOME: bobHome, ORCHCTL_HOME: bobHome };
  const kg = await cli(["keygen"], bobEnv);
  if (kg.code !== 0) throw new Error(kg.stderr);
  alice.server.addOperator("bob", (await readFile(join(bobHome, "id_ed25519.pub"), "utf8")).trim(), "admin");
  const login = await cli(["login", "--server", alice.server.url], bobEnv);
  if (login.code !== 0) throw new Error(login.stderr);
  return { alice, bob: bobEnv, api: approvalsApi(alice.server) };
}

t.test("approval-policies put/list/get/delete, and a refused policy explained", async (t) => {
  const { alice, bob } = await twoOperators(t);
  const file = join(alice.env.HOME, "prod.yaml");
  await writeFile(
    file,
    "description: prod needs a second person\nactions: [assignment.apply]\nselector: env=prod\napprovals_required: 1\napprovers: ['operator:bob', 'role:admin']\n",
  );
  const put = await cli(["approval-policies", "put", "prod", "-f", file, "--expires-after", "3600"], bob);
  t.equal(put.code, 0, put.stderr);
  t.match(put.stdout, /Saved approval policy prod/);
  t.match(put.stdout, /approvers:\s+operator:bob, role:admin/);
  t.match(bodyOf(alice.server), {
    actions: ["assignment.apply"],
    selector: "env=prod",
    approvals_required: 1,
    expires_after_seconds: 3600,
  });

  const flags = await cli(
    [
      "approval-policies",
      "put",
      "flags",
      "--action",
      "assignment.apply",
      "--action",
      "access.request",
      "--max-access",
      "3600",
      "--approvals",
      "2",
      "--approver",
      "role:admin",
      "--requester-may-approve",
    ],
    bob,
  );
  t.equal(flags.code, 0, flags.stderr);
  t.same(bodyOf(alice.server), {
    actions: ["assignment.apply", "access.request"],
    max_access_seconds: 3600,
    approvals_required: 2,
    approvers: ["role:admin"],
    requester_may_approve: true,
  });
  // flags alone change the stored policy
  const upd = await cli(["approval-policies", "put", "flags", "--approvals", "3"], bob);
  t.equal(upd.code, 0, upd.stderr);
  t.match(bodyOf(alice.server), { actions: ["assignment.apply", "access.request"], approvals_required: 3 });

  const ls = await cli(["approval-policies", "list"], bob);
  t.equal(ls.code, 0, ls.stderr);
  t.match(ls.stdout, /^NAME\s+ACTIONS\s+SELECTOR\s+APPROVALS\s+APPROVERS\s+EXPIRES AFTER/);
  t.match(ls.stdout, /prod\s+assignment\.apply\s+env=prod\s+1\s+operator:bob,role:admin\s+3600s/);
  const lj = await cli(["--json", "approval-policies", "list"], bob);
  t.equal(JSON.parse(lj.stdout).policies.length, 2);

  const get = await cli(["approval-policies", "get", "prod"], bob);
  t.equal(get.code, 0, get.stderr);
  t.match(get.stdout, /requester may approve:\s+no/);
  t.match(JSON.parse((await cli(["--json", "approval-policies", "get", "prod"], bob)).stdout), { name: "prod" });

  const bad = await cli(
    [
      "approval-policies",
      "put",
      "bad",
      "--action",
      "assignment.apply",
      "--approvals",
      "11",
      "--approver",
      "role:admin",
    ],
    bob,
  );
  t.equal(bad.code, 1);
  t.match(bad.stderr, /error: approvals_required must be 1\.\.10 \(invalid_approval_policy\)\n {2}approvals: 1\.\.10/);
  t.match(bad.stderr, /approvals: 1\.\.10 \(--approvals\)/);
  const badJ = await cli(
    ["--json", "approval-policies", "put", "bad", "--action", "nope", "--approvals", "1", "--approver", "role:admin"],
    bob,
  );
  t.equal(badJ.code, 1);
  t.match(JSON.parse(badJ.stdout), { code: "invalid_approval_policy", field: "actions" });
  const who = await cli(
    [
      "approval-policies",
      "put",
      "bad",
      "--action",
      "assignment.apply",
      "--approvals",
      "1",
      "--approver",
      "operator:zed",
    ],
    bob,
  );
  t.match(who.stderr, /no operator zed .*\(unknown_approver\)\n.*operator:<name>/);

  const missing = await cli(["approval-policies", "put", "bad", "--approvals", "1"], bob);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /a new policy needs --action, --approver/);
  const notNum = await cli(["approval-policies", "put", "bad", "--approvals", "two"], bob);
  t.match(notNum.stderr, /--approvals expects a whole number/);

  const byOperator = await cli(["approval-policies", "list"], alice.env);
  t.equal(byOperator.code, 0, "every operator reads the policies");
  t.match(byOperator.stdout, /flags/);
  const writeByOperator = await cli(["approval-policies", "delete", "flags"], alice.env);
  t.equal(writeByOperator.code, 1);
  t.match(writeByOperator.stderr, /admin_required/);

  const del = await cli(["approval-policies", "delete", "flags"], bob);
  t.equal(del.code, 0, del.stderr);
  t.match(del.stdout, /Deleted approval policy flags/);
  const gone = await cli(["approval-policies", "get", "flags"], bob);
  t.equal(gone.code, 1);
  t.match(gone.stderr, /approval_policy_not_found/);
});

t.test("an apply held for approval: requests list/show, own approval refused, approve executes", async (t) => {
  const { alice, bob } = await twoOperators(t);
  t.equal(
    (
      await cli(
        [
          "approval-policies",
          "put",
          "prod",
          "--action",
          "assignment.apply",
          "--selector",
          "env=prod",
          "--approvals",
          "1",
          "--approver",
          "role:admin",
        ],
        bob,
      )
    ).code,
    0,
  );

  const apply = await cli(["assignments", "apply", "web", "--reason", "ship motd"], alice.env);
  t.equal(apply.code, 0, apply.stderr);
  t.same(alice.server.requests.find((q) => q.path === "/api/v1/assignments/web/apply")?.body, { reason: "ship motd" });
  t.match(
    apply.stdout,
    /apply of web held for approval: change request cr-1 \(policy prod, 1 approval required; plan run run-plan-1 on 2 agents\) — orchctl requests show cr-1/,
  );

  const applyJ = await cli(["--json", "assignments", "apply", "web"], alice.env);
  t.equal(applyJ.code, 0, applyJ.stderr);
  t.match(JSON.parse(applyJ.stdout), { change_request_id: "cr-2", run_id: "run-plan-1", kind: "plan" });
  t.equal((await cli(["requests", "cancel", "cr-2", "--comment", "dup"], alice.env)).code, 0);
  const replanned = await cli(["requests", "replan", "cr-1", "--comment", "modules moved on"], alice.env);
  t.equal(replanned.code, 0, replanned.stderr);
  t.match(
    replanned.stdout,
    /^Re-planned change request cr-1 \(assignment\.apply assignment\/web\): apply assignment web on 3 agents$/m,
  );
  t.same(alice.server.requests.at(-1)?.body, { comment: "modules moved on" });
  const notPending = await cli(["requests", "replan", "cr-2"], alice.env);
  t.equal(notPending.code, 1);
  t.match(notPending.stderr, /change_request_not_pending/);

  const mine = await cli(["requests", "list", "--mine"], alice.env);
  t.equal(mine.code, 0, mine.stderr);
  t.match(mine.stdout, /^ID\s+ACTION\s+TARGET\s+STATUS\s+REQUESTER\s+APPROVALS\s+CREATED\s+EXPIRES/);
  t.match(mine.stdout, /cr-1\s+assignment\.apply\s+assignment\/web\s+pending\s+alice\s+0\/1/);
  t.equal(alice.server.requests.at(-1)?.query.get("mine"), "true");

  const none = await cli(["requests", "list", "--to-approve"], alice.env);
  t.equal(none.code, 0, none.stderr);
  t.notMatch(none.stdout, /cr-1/);
  const todo = await cli(["requests", "list", "--to-approve", "--status", "pending"], bob);
  t.equal(todo.code, 0, todo.stderr);
  t.match(todo.stdout, /cr-1\s+assignment\.apply/);
  t.notMatch(todo.stdout, /cr-2/);
  t.equal(alice.server.requests.at(-1)?.query.get("to_approve"), "true");
  const todoJ = await cli(["--json", "requests", "list", "--to-approve"], bob);
  t.match(JSON.parse(todoJ.stdout), { requests: [{ id: "cr-1" }], has_more: false });
  const badStatus = await cli(["requests", "list", "--status", "open"], bob);
  t.equal(badStatus.code, 1);
  t.match(badStatus.stderr, /--status must be one of pending, approved/);

  const show = await cli(["requests", "show", "cr-1"], bob);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /policy:\s+prod/);
  t.match(show.stdout, /reason:\s+ship motd/);
  t.match(show.stdout, /approvals:\s+0\/1/);
  t.match(show.stdout, /decisions:\n {2}\(none yet\)/);
  t.match(show.stdout, /targets \(2\):\n {4}web-1 {2}node-a\n {4}web-2 {2}node-b/);
  t.match(show.stdout, /plan run: run-plan-1/);
  t.match(show.stdout, /web-1 {2}succeeded {2}orchctl ops show op-plan-a/);
  t.match(show.stderr, /decide: orchctl requests approve cr-1/);
  const showJ = await cli(["--json", "requests", "show", "cr-1"], bob);
  t.match(JSON.parse(showJ.stdout), { id: "cr-1", content: { plan_run_id: "run-plan-1" } });
  const nope = await cli(["requests", "show", "nope"], bob);
  t.equal(nope.code, 1);
  t.match(nope.stderr, /change_request_not_found/);

  const own = await cli(["requests", "approve", "cr-1"], alice.env);
  t.equal(own.code, 1);
  t.match(own.stderr, /error: you may not decide your own change request \(own_change_request\)/);
  const ownJ = await cli(["--json", "requests", "approve", "cr-1"], alice.env);
  t.equal(ownJ.code, 1);
  t.match(JSON.parse(ownJ.stdout), { code: "own_change_request", status: 403 });

  const ok = await cli(["requests", "approve", "cr-1", "--comment", "looks right"], bob);
  t.equal(ok.code, 0, ok.stderr);
  t.same(bodyOf(alice.server), { comment: "looks right" });
  t.match(ok.stdout, /Approved change request cr-1 \(assignment\.apply assignment\/web\): executed \(run-apply-9\)/);
  const after = await cli(["requests", "show", "cr-1"], alice.env);
  t.match(after.stdout, /status:\s+executed/);
  t.match(after.stdout, /approved by bob: looks right/);
  const again = await cli(["--json", "requests", "deny", "cr-1"], bob);
  t.equal(again.code, 1);
  t.match(JSON.parse(again.stdout), { code: "change_request_not_pending" });
});

t.test("--break-glass needs --reason (client-side); with it the body carries both", async (t) => {
  const { alice, bob } = await twoOperators(t);
  const before = alice.server.requests.length;
  for (const args of [["--break-glass"], ["--break-glass", "--reason", "  "]]) {
    const r = await cli(["assignments", "apply", "web", ...args], bob);
    t.equal(r.code, 1);
    t.match(r.stderr, /--break-glass needs --reason TEXT.*\(break_glass_reason_required\)/);
  }
  const j = await cli(["--json", "assignments", "apply", "web", "--break-glass"], bob);
  t.equal(j.code, 1);
  t.match(JSON.parse(j.stdout), { code: "break_glass_reason_required" });
  t.equal(alice.server.requests.length, before, "nothing was sent");

  const r = await cli(["--json", "assignments", "apply", "web", "--break-glass", "--reason", "outage"], bob);
  t.equal(r.code, 0, r.stderr);
  t.same(alice.server.requests.find((q) => q.path === "/api/v1/assignments/web/apply")?.body, {
    reason: "outage",
    break_glass: true,
  });
  t.match(JSON.parse(r.stdout), { run_id: "run-bg-1", status: "completed" });
  const op = await cli(["assignments", "apply", "web", "--break-glass", "--reason", "outage"], alice.env);
  t.equal(op.code, 1);
  t.match(op.stderr, /break_glass_forbidden/);
  const plan = await cli(["assignments", "plan", "web", "--break-glass"], bob);
  t.equal(plan.code, 1);
  t.match(plan.stderr, /unknown option '--break-glass'/);
});

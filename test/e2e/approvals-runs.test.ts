import t, { type Test } from "tap";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { contentHash } from "@orch/contracts";
import { ed25519, eventually } from "@orch/kit/testing";
import { cli } from "../../cli/test/helpers/cli.js";
import { startStateStack } from "./lib/state-stack.js";

// Four-eyes fleet command runs (docs/approvals.md, command.run) with real processes (auth, agents,
// secrets, audit, state, gateway), real orch-agents tagged env=prod and env=dev, operators allowed
// to run commands, a requester (alice) and an approver (bob). A policy holds runs touching env=prod
// for one approval. Needs `npm run build`.
const { system, agents, linkPort, dir } = await startStateStack(t, {
  name: "approvals-runs",
  keyByte: 43,
  extraServices: ["audit"],
  env: { ORCH_GATEWAY_OPERATORS_MAY_RUN_COMMANDS: "true" },
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
  return { id: op.id as string, key, api: as(await system.login(key)) };
}
const alice = await operator("alice"); // requests
const bob = await operator("bob"); // approves

const server = `127.0.0.1:${linkPort}`;
const prod = await agents.spawn(["--server", server, "--no-terminal"]).nodeId();
const dev = await agents.spawn(["--server", server, "--no-terminal"]).nodeId();
const tag = (id: string, env: string) => must(admin("PUT", `/agents/${id}/tags`, { tags: { env } }), 200);
for (const [id, name, env] of [
  [prod, "prod-1", "prod"],
  [dev, "dev-1", "dev"],
] as const) {
  await eventually(async () => (await admin("GET", `/agents/${id}`)).body?.connected === true, 20_000);
  await must(admin("POST", `/agents/${id}`, { status: "approved", name }), 200);
  await tag(id, env);
}
await must(
  admin("PUT", "/approval-policies/prod-runs", {
    actions: ["command.run"],
    selector: "env=prod",
    approvals_required: 1,
    approvers: ["operator:bob"],
    expires_after_seconds: 3600,
  }),
  200,
);

const events = async (type: string) =>
  (await must(admin("GET", `/audit?event_type=${type}&limit=100`), 200)).events as any[];
const aliceRuns = async () => (await must(alice.api("GET", "/runs?limit=200"), 200)).runs as any[];
const finished = (api: typeof admin, id: string) =>
  eventually(async () => {
    const r = (await must(api("GET", `/runs/${id}`), 200)) as any;
    return ["completed", "stopped", "cancelled", "interrupted"].includes(r.status) ? r : undefined;
  }, 30_000);
const PROD_RUN = { selector: "env=prod", command: ["sh", "-c", "echo ran-$((6*7))"] };

let held: any;
t.test("a run touching env=prod is held: nothing runs, a pending change request names it", async (t) => {
  const r = await must(alice.api("POST", "/runs", { ...PROD_RUN, reason: "check the answer" }), 202);
  t.equal(r.status, "held");
  t.ok(r.change_request_id, "the run became a change request");
  t.same(r.targets, ["prod-1"]);
  t.same(r.node_ids, [prod]);
  t.equal(r.summary, "run `sh -c echo ran-$((6*7))` on 1 agent");
  t.notOk(r.id, "no run exists");
  t.same(await aliceRuns(), [], "no run was recorded");
  held = await must(bob.api("GET", `/change-requests/${r.change_request_id}`), 200);
  t.equal(held.status, "pending");
  t.equal(held.action, "command.run");
  t.equal(held.policy, "prod-runs");
  t.equal(held.target_type, "run");
  t.equal(held.target_name, "sh");
  t.equal(held.reason, "check the answer");
  t.same(held.content.command, PROD_RUN.command);
  t.equal(held.content.script, null);
  t.equal(held.content.selector, "env=prod");
  t.same(held.content.targets, [{ node_id: prod, name: "prod-1" }]);
  t.same(held.content.env_keys, []);
  t.equal(held.content_hash, contentHash(held.content), "the hash is the canonical hash of the content");
});

t.test("a run outside the policy's agents runs at once", async (t) => {
  const r = await must(alice.api("POST", "/runs", { selector: "env=dev", command: ["echo", "dev-ran"] }), 202);
  t.ok(r.id);
  t.notOk(r.change_request_id);
  const done = await finished(alice.api, r.id);
  t.equal(done.agents[0].name, "dev-1");
  t.equal(done.agents[0].stdout, "dev-ran\n");
});

t.test("env on a run a policy holds is refused before anything is submitted", async (t) => {
  const before = (await must(alice.api("GET", "/change-requests?mine=true"), 200)).requests.length;
  const r = await alice.api("POST", "/runs", { ...PROD_RUN, env: { TOKEN: "s3cret-value" } });
  problem(t, r, 409, "held_run_env");
  t.notMatch(r.text, /s3cret-value/, "the value is not echoed");
  t.equal((await must(alice.api("GET", "/change-requests?mine=true"), 200)).requests.length, before);
  t.equal((await aliceRuns()).length, 1, "only the dev run exists");
});

t.test("the approver approves: it runs once, as the requester, with the approver recorded", async (t) => {
  problem(t, await alice.api("POST", `/change-requests/${held.id}/approve`, {}), 403, "own_change_request");
  const cr = await must(bob.api("POST", `/change-requests/${held.id}/approve`, { comment: "ok" }), 200);
  t.equal(cr.status, "executed");
  t.ok(cr.result, "names the run it started");
  const run = await finished(alice.api, cr.result);
  t.equal(run.started_by.name, "alice", "started under the requester's identity");
  t.equal(run.change_request_id, held.id);
  t.same(
    run.agents.map((a: any) => [a.name, a.status, a.stdout]),
    [["prod-1", "succeeded", "ran-42\n"]],
  );
  const started = await eventually(async () =>
    (await events("run.started")).find((e) => e.metadata.run_id === cr.result),
  );
  t.equal(started.actor.name, "alice");
  t.equal(started.metadata.change_request_id, held.id);
  t.same(started.metadata.approved_by, ["bob"]);
  const executed = await eventually(async () =>
    (await events("change_request.executed")).find((e) => e.target.id === held.id),
  );
  t.match(JSON.stringify(executed.metadata), /bob/);
  problem(t, await bob.api("POST", `/change-requests/${held.id}/approve`, {}), 409, "change_request_not_pending");
  t.equal((await aliceRuns()).filter((r) => r.change_request_id === held.id).length, 1, "executed once");
});

t.test("an agent joining the selector after the request: approval refused with plan_changed", async (t) => {
  const r = await must(alice.api("POST", "/runs", { ...PROD_RUN, reason: "again" }), 202);
  const runs = (await aliceRuns()).length;
  await tag(dev, "prod");
  try {
    problem(t, await bob.api("POST", `/change-requests/${r.change_request_id}/approve`, {}), 409, "plan_changed");
    const cr = await must(bob.api("GET", `/change-requests/${r.change_request_id}`), 200);
    t.equal(cr.status, "pending", "still pending");
    t.equal((await aliceRuns()).length, runs, "nothing ran");
  } finally {
    await tag(dev, "dev");
  }
  // Back to the approved targets, the same request executes.
  const done = await must(bob.api("POST", `/change-requests/${r.change_request_id}/approve`, {}), 200);
  t.equal(done.status, "executed");
  t.same(
    (await finished(alice.api, done.result)).agents.map((a: any) => a.name),
    ["prod-1"],
  );
});

t.test("re-plan: the request takes the agents the selector reaches now and needs approval again", async (t) => {
  const r = await must(alice.api("POST", "/runs", { ...PROD_RUN, reason: "replan me" }), 202);
  await tag(dev, "prod");
  try {
    problem(t, await bob.api("POST", `/change-requests/${r.change_request_id}/approve`, {}), 409, "plan_changed");
    const before = await must(alice.api("GET", `/change-requests/${r.change_request_id}`), 200);
    t.equal(before.replannable, true, "a pending run can be re-planned");
    const re = await must(alice.api("POST", `/change-requests/${r.change_request_id}/replan`, {}), 200);
    t.equal(re.status, "pending");
    t.not(re.content_hash, before.content_hash, "bound to the new content");
    t.same(re.content.targets.map((x: any) => x.name).sort(), ["dev-1", "prod-1"], "both agents now");
    t.match(re.summary, /on 2 agents/);
    const done = await must(bob.api("POST", `/change-requests/${r.change_request_id}/approve`, {}), 200);
    t.equal(done.status, "executed");
    t.same((await finished(alice.api, done.result)).agents.map((a: any) => a.name).sort(), ["dev-1", "prod-1"]);
  } finally {
    await tag(dev, "dev");
  }
});

t.test("orchctl: a held run prints the request and exits 0; requests show names the command", async (t) => {
  const pem = join(dir, "alice.pem");
  writeFileSync(pem, alice.key.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  const env = { HOME: dir, ORCHCTL_HOME: join(dir, "alice-home"), ORCH_URL: system.url };
  const login = await cli(["login", "--key", pem], env);
  t.equal(login.code, 0, login.stderr);
  const r = await cli(["run", "env=prod", "--reason", "from the cli", "--", "uname", "-n"], env);
  t.equal(r.code, 0, r.stderr);
  const m = /run held for approval: change request (\S+) \(1 agent\) — orchctl requests show (\S+)/.exec(r.stdout);
  t.ok(m, r.stdout);
  t.equal(m?.[1], m?.[2]);
  const show = await cli(["requests", "show", m?.[1] ?? ""], env);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /command: {2}\["uname","-n"\]/);
  t.match(show.stdout, /targets \(1\):\n {4}prod-1 {2}/);
  const json = await cli(["--json", "run", "env=prod", "--", "uname"], env);
  t.equal(json.code, 0, json.stderr);
  t.equal(JSON.parse(json.stdout).status, "held");
  const glass = await cli(["run", "env=prod", "--break-glass", "--", "uname"], env);
  t.not(glass.code, 0, "--break-glass without --reason is refused before sending");
  t.match(glass.stderr, /--reason/);
});

t.test("break-glass: admins only, with a reason; the run starts now, env included", async (t) => {
  const body = { selector: "env=prod", command: ["sh", "-c", 'echo "x=$X"'], env: { X: "1" } };
  problem(
    t,
    await alice.api("POST", "/runs", { ...body, break_glass: true, reason: "outage" }),
    403,
    "break_glass_forbidden",
  );
  problem(t, await admin("POST", "/runs", { ...body, break_glass: true }), 400, "break_glass_reason_required");
  problem(
    t,
    await admin("POST", "/runs", { ...body, break_glass: true, reason: "  " }),
    400,
    "break_glass_reason_required",
  );
  const r = await must(admin("POST", "/runs", { ...body, break_glass: true, reason: "outage" }), 202);
  t.ok(r.id, "a run, not a request");
  t.notOk(r.change_request_id);
  const done = await finished(admin, r.id);
  t.same(done.env_keys, ["X"]);
  t.equal(done.agents[0].stdout, "x=1\n");
  const bypassed = await eventually(async () =>
    (await events("approval.bypassed")).find((e) => e.metadata.action === "command.run"),
  );
  t.equal(bypassed.severity, "critical");
  t.equal(bypassed.metadata.policy, "prod-runs");
  t.equal(bypassed.metadata.reason, "outage");
  t.same(bypassed.metadata.notify_operator_ids, [bob.id]);
});

import t, { type Test } from "tap";
import { sign } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, ed25519, eventually, freePort } from "@orch/kit/testing";
import { startNats, startSystem, type KeyPair } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";
import { cli } from "../../cli/test/helpers/cli.js";
import { rawAttach } from "./lib/raw-ws.js";

// Four-eyes terminals (docs/approvals.md, terminal.open) with real processes (auth, agents,
// terminal, audit, gateway) and two real orch-agents with real PTYs tagged env=prod and env=dev. A
// policy holds terminals on env=prod for one approver (bob): alice's open is held and opens
// nothing; bob's approval records a one-time pass that alice (and only alice) opens one real
// terminal with. Needs `npm run build`.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const work = mkdtempSync(join(tmpdir(), "orch-e2e-term-approvals-"));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "terminal", "audit", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_TERMINAL_TRANSCRIPT_DIR: join(work, "transcripts"),
    ORCH_TERMINAL_OPEN_TIMEOUT_SECONDS: "10",
  },
  readyTimeoutMs: 90_000,
});
const agents = agentPool();
t.teardown(async () => {
  await agents.stop();
});

type Res = { status: number; body: any; text: string };
async function api(method: string, path: string, token?: string, body?: unknown): Promise<Res> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const init: RequestInit = { method, headers, signal: AbortSignal.timeout(30_000) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(`${system.url}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}
const must = async (p: Promise<Res>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};
const problem = (t: Test, r: Res, status: number, code: string) => {
  t.equal(r.status, status, `status ${status}`);
  t.equal(r.body?.code, code, `code ${code}`);
};

async function login(key: KeyPair): Promise<string> {
  const ch = await must(api("POST", "/api/v1/auth/challenge", undefined, { public_key: key.publicKeyHex }), 200);
  const signature = sign(null, Buffer.from(ch.nonce, "hex"), key.privateKey).toString("hex");
  const v = await must(
    api("POST", "/api/v1/auth/verify", undefined, { public_key: key.publicKeyHex, nonce: ch.nonce, signature }),
    200,
  );
  return v.token as string;
}
const admin = await login(system.admin);

async function operator(name: string) {
  const key = ed25519();
  const op = await must(
    api("POST", "/api/v1/operators", admin, { name, public_key: key.publicKeyHex, role: "operator" }),
    201,
  );
  return { id: op.id as string, key, token: await login(key) };
}

async function agent(name: string, env: string): Promise<string> {
  const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--shell", "/bin/sh"]);
  const nodeId = await proc.nodeId();
  await eventually(async () => (await api("GET", `/api/v1/agents/${nodeId}`, admin)).body?.connected === true, 20_000);
  await must(api("POST", `/api/v1/agents/${nodeId}`, admin, { status: "approved", name }), 200);
  await must(api("PUT", `/api/v1/agents/${name}/tags`, admin, { tags: { env } }), 200);
  return nodeId;
}
const web1 = await agent("web-1", "prod");
await agent("dev-1", "dev");

const alice = await operator("alice"); // opens terminals
const bob = await operator("bob"); // approves
const carol = await operator("carol"); // another operator
await must(
  api("PUT", "/api/v1/approval-policies/prod-terminals", admin, {
    actions: ["terminal.open"],
    selector: "env=prod",
    approvals_required: 1,
    approvers: ["operator:bob"],
  }),
  200,
);

const events = async (type: string) =>
  (await must(api("GET", `/api/v1/audit?event_type=${type}&limit=100`, admin), 200)).events as any[];
/** The caller's sessions on web-1 (the held agent). */
const onWeb1 = async (token: string) =>
  ((await must(api("GET", "/api/v1/terminal", token), 200)) as any[]).filter((s) => s.node_id === web1);
const open = (token: string, agentName: string, query = "") =>
  api("POST", `/api/v1/terminal/${agentName}${query ? `?${query}` : ""}`, token);

/** A real PTY behind the answer: the shell computes something the typed line does not contain. */
async function proveShell(t: Test, wsUrl: string, token: string) {
  const ws = await rawAttach(wsUrl, token);
  ws.sendBinary("echo $((6*7))x\r");
  await eventually(() => ws.output().includes("42x"), 10_000);
  t.pass("the shell answered");
  ws.destroy();
}

/** Alice asks for a terminal on web-1 and gets the held request's id. */
async function held(t: Test, reason = "look at the logs"): Promise<string> {
  const r = await open(alice.token, "web-1", `reason=${encodeURIComponent(reason)}`);
  t.equal(r.status, 202, r.text);
  t.equal(r.body.status, "held");
  t.equal(r.body.summary, "open a terminal on web-1");
  return r.body.change_request_id as string;
}

t.test("held on env=prod: a change request, no session; not held on env=dev", async (t) => {
  const id = await held(t);
  t.same(await onWeb1(alice.token), [], "no session was opened");
  const cr = await must(api("GET", `/api/v1/change-requests/${id}`, bob.token), 200);
  t.equal(cr.status, "pending");
  t.equal(cr.action, "terminal.open");
  t.equal(cr.target_type, "agent");
  t.equal(cr.target_name, "web-1");
  t.equal(cr.reason, "look at the logs");
  t.equal(cr.policy, "prod-terminals");
  t.same(cr.content, { agent: { node_id: web1, name: "web-1" }, shell: "" });

  const dev = await must(open(alice.token, "dev-1"), 201);
  t.ok(dev.ws_url, "dev-1 opens at once");
  await proveShell(t, dev.ws_url, alice.token);
  await must(api("DELETE", `/api/v1/terminal/session/${dev.session_id}`, alice.token), 204);
  await must(api("POST", `/api/v1/change-requests/${id}/cancel`, alice.token, {}), 200);
});

t.test("approved: a one-time pass for the requester only; the session records the request", async (t) => {
  const id = await held(t);
  problem(t, await open(alice.token, "web-1", `change_request_id=${id}`), 403, "terminal_pass_invalid");
  const done = await must(api("POST", `/api/v1/change-requests/${id}/approve`, bob.token, { comment: "ok" }), 200);
  t.equal(done.status, "executed");
  t.equal(done.result, `pass:${id}`);
  const executed = await eventually(async () =>
    (await events("change_request.executed")).find((e) => e.target.id === id),
  );
  t.equal(executed.actor.name, "alice", "executed as the requester");
  t.match(JSON.stringify(executed.metadata), /bob/, "with the approver recorded");
  t.same(await onWeb1(alice.token), [], "the approval opens nothing by itself");

  problem(t, await open(carol.token, "web-1", `change_request_id=${id}`), 403, "terminal_pass_invalid");
  problem(t, await open(alice.token, "dev-1", `change_request_id=${id}`), 403, "terminal_pass_invalid");
  const opened = await must(open(alice.token, "web-1", `change_request_id=${id}`), 201);
  await proveShell(t, opened.ws_url, alice.token);
  const s = await must(api("GET", `/api/v1/terminal/session/${opened.session_id}`, alice.token), 200);
  t.equal(s.status, "open");
  t.equal(s.node_id, web1);
  const ev = await eventually(async () =>
    (await events("terminal.session.opened")).find((e) => e.target.id === opened.session_id),
  );
  t.equal(ev.metadata.change_request_id, id, "the opened event names the request");

  problem(t, await open(alice.token, "web-1", `change_request_id=${id}`), 409, "terminal_pass_used");
  problem(t, await open(carol.token, "web-1", `change_request_id=${id}`), 403, "terminal_pass_invalid");
  t.equal((await onWeb1(alice.token)).length, 1, "one session from one pass");
  await must(api("DELETE", `/api/v1/terminal/session/${opened.session_id}`, alice.token), 204);
});

t.test("the agent out of the requester's reach since: approval refused with plan_changed", async (t) => {
  const id = await held(t);
  await must(api("PATCH", `/api/v1/operators/${alice.id}`, admin, { agent_selector: "env=dev" }), 200);
  problem(t, await api("POST", `/api/v1/change-requests/${id}/approve`, bob.token, {}), 409, "plan_changed");
  t.equal((await must(api("GET", `/api/v1/change-requests/${id}`, bob.token), 200)).status, "pending");
  await must(api("PATCH", `/api/v1/operators/${alice.id}`, admin, { agent_selector: null }), 200);
  const done = await must(api("POST", `/api/v1/change-requests/${id}/approve`, bob.token, {}), 200);
  t.equal(done.status, "executed", "in reach again, the same content executes");
});

t.test("break-glass: admins only, with a reason, audited as critical", async (t) => {
  problem(t, await open(alice.token, "web-1", "break_glass=true&reason=outage"), 403, "break_glass_forbidden");
  problem(t, await open(admin, "web-1", "break_glass=true"), 400, "break_glass_reason_required");
  t.equal((await events("approval.bypassed")).length, 0, "refusals record nothing");
  const heldAdmin = await open(admin, "web-1");
  t.equal(heldAdmin.status, 202, "an admin without break-glass is held too");
  await must(api("POST", `/api/v1/change-requests/${heldAdmin.body.change_request_id}/cancel`, admin, {}), 200);

  const opened = await must(open(admin, "web-1", "break_glass=true&reason=INC-42"), 201);
  await proveShell(t, opened.ws_url, admin);
  const bypassed = await eventually(async () => (await events("approval.bypassed"))[0]);
  t.equal(bypassed.severity, "critical");
  t.equal(bypassed.metadata.action, "terminal.open");
  t.equal(bypassed.metadata.policy, "prod-terminals");
  t.equal(bypassed.metadata.reason, "INC-42");
  t.same(bypassed.metadata.notify_operator_ids, [bob.id]);
  t.equal(bypassed.target.id, web1);
  await must(api("DELETE", `/api/v1/terminal/session/${opened.session_id}`, admin), 204);
});

t.test("orchctl ssh: a held terminal prints the request and exits 0", async (t) => {
  const pem = join(work, "alice.pem");
  writeFileSync(pem, alice.key.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  const env = { ORCHCTL_HOME: join(work, "alice-home"), HOME: work };
  t.equal((await cli(["--server", system.url, "login", "--key", pem], env)).code, 0);
  const r = await cli(["ssh", "web-1", "--reason", "disk full"], env);
  t.equal(r.code, 0, r.stderr);
  const m =
    /terminal on web-1 held for approval: change request (\w+) — once approved, orchctl ssh web-1 --request (\w+)/.exec(
      r.stdout,
    );
  t.ok(m, r.stdout);
  t.equal(m?.[1], m?.[2]);
  const j = await cli(["--json", "ssh", "web-1"], env);
  t.equal(j.code, 0, j.stderr);
  t.equal(JSON.parse(j.stdout).status, "held");
  const bg = await cli(["ssh", "web-1", "--break-glass"], env);
  t.not(bg.code, 0);
  t.match(bg.stderr, /--break-glass needs --reason/);

  const id = m![1]!;
  await must(api("POST", `/api/v1/change-requests/${id}/approve`, bob.token, {}), 200);
  const opened = await cli(["--json", "ssh", "web-1", "--request", id], env);
  t.equal(opened.code, 0, opened.stderr);
  const body = JSON.parse(opened.stdout);
  t.ok(body.session_id, "opened with the pass");
  await must(api("DELETE", `/api/v1/terminal/session/${body.session_id}`, alice.token), 204);
});

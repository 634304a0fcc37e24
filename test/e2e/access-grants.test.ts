import t, { type Test } from "tap";
import { sign } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, ed25519, eventually, freePort, waitMs, within } from "@orch/kit/testing";
import { startNats, startSystem, type KeyPair } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";
import { cli } from "../../cli/test/helpers/cli.js";
import { rawAttach, type RawWs } from "./lib/raw-ws.js";

// Just-in-time access (docs/approvals.md) with real processes (auth, agents, terminal, audit, the
// gateway) and two real orch-agents with real PTYs: an operator scoped to role=web asks for role=db
// for 5 s, an approver grants it, the operator opens a terminal on the db agent, and the terminal
// closes by itself when the grant expires (4403 scope_changed); a grant revoked early closes its
// terminal at once. Needs `npm run build`.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const work = mkdtempSync(join(tmpdir(), "orch-e2e-jit-"));
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
    // The periodic re-validation, the fallback for an unheard change, out of the way: the grant's
    // end must be heard.
    ORCH_GATEWAY_TOKEN_CACHE_TTL_MS: String(3_600_000),
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

async function operator(name: string, selector?: string) {
  const key = ed25519();
  const body = {
    name,
    public_key: key.publicKeyHex,
    role: "operator",
    ...(selector ? { agent_selector: selector } : {}),
  };
  const op = await must(api("POST", "/api/v1/operators", admin, body), 201);
  return { id: op.id as string, key, token: await login(key) };
}

async function agent(name: string, role: string): Promise<string> {
  const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--shell", "/bin/sh"]);
  const nodeId = await proc.nodeId();
  await eventually(async () => (await api("GET", `/api/v1/agents/${nodeId}`, admin)).body?.connected === true, 20_000);
  await must(api("POST", `/api/v1/agents/${nodeId}`, admin, { status: "approved", name }), 200);
  await must(api("PUT", `/api/v1/agents/${name}/tags`, admin, { tags: { role } }), 200);
  return nodeId;
}
await agent("web-1", "web");
await agent("db-1", "db");

const dave = await operator("dave", "role=web"); // asks for access
const erin = await operator("erin"); // grants it
await must(
  api("PUT", "/api/v1/approval-policies/access", admin, {
    actions: ["access.request"],
    selector: "*",
    approvals_required: 1,
    approvers: ["operator:erin"],
    max_access_seconds: 600,
  }),
  200,
);

let markers = 0;
const marker = () => join(work, `marker-${++markers}`);
async function terminal(token: string, agentName: string): Promise<RawWs> {
  const r = await must(api("POST", `/api/v1/terminal/${agentName}`, token), 201);
  const ws = await rawAttach(r.ws_url, token);
  const before = marker();
  ws.sendBinary(`touch ${before}\r`);
  await eventually(() => existsSync(before), 10_000);
  return ws;
}
const events = async (type: string) =>
  (await must(api("GET", `/api/v1/audit?event_type=${type}&limit=100`, admin), 200)).events as any[];

/** Dave asks for role=db for `seconds`; Erin approves; the grant's id. */
async function granted(seconds: number): Promise<string> {
  const cr = await must(
    api("POST", "/api/v1/access-requests", dave.token, {
      agent_selector: "role=db",
      reason: "restart the primary",
      duration_seconds: seconds,
    }),
    201,
  );
  t.equal(cr.status, "pending");
  t.equal(cr.action, "access.request");
  const done = await must(api("POST", `/api/v1/change-requests/${cr.id}/approve`, erin.token, {}), 200);
  t.equal(done.status, "executed");
  return done.result as string;
}

t.test("bad access requests change nothing", async (t) => {
  const ask = (body: Record<string, unknown>) => api("POST", "/api/v1/access-requests", dave.token, body);
  problem(
    t,
    await ask({ agent_selector: "role=db", reason: "x", duration_seconds: 601 }),
    400,
    "access_duration_too_long",
  );
  problem(
    t,
    await ask({ agent_selector: "role=db", reason: "  ", duration_seconds: 60 }),
    400,
    "invalid_access_request",
  );
  problem(t, await ask({ reason: "x", duration_seconds: 60 }), 400, "invalid_access_request");
  problem(t, await ask({ agent_selector: "role=(", reason: "x", duration_seconds: 60 }), 400, "invalid_access_request");
  problem(
    t,
    await ask({ agent_selector: "a=b || c=d", reason: "x", duration_seconds: 60 }),
    400,
    "invalid_access_request",
  );
  problem(
    t,
    await api("POST", "/api/v1/access-requests", admin, { role: "admin", reason: "x", duration_seconds: 60 }),
    400,
    "invalid_access_request",
  );
  t.equal((await events("access.requested")).length, 0, "no request recorded");
  const own = await must(
    api("POST", "/api/v1/access-requests", dave.token, {
      agent_selector: "role=db",
      reason: "x",
      duration_seconds: 60,
    }),
    201,
  );
  problem(t, await api("POST", `/api/v1/change-requests/${own.id}/approve`, dave.token, {}), 403, "own_change_request");
  await must(api("POST", `/api/v1/change-requests/${own.id}/cancel`, dave.token, {}), 200);
  t.equal((await api("GET", "/api/v1/agents/db-1", dave.token)).status, 404, "still out of reach");
});

t.test("a 5 s grant on role=db opens a terminal that closes when the grant expires", async (t) => {
  t.equal((await api("GET", "/api/v1/agents/db-1", dave.token)).status, 404, "before: out of reach");
  const grantId = await granted(5);
  t.equal((await api("GET", "/api/v1/agents/db-1", dave.token)).status, 200, "granted: in reach at once");
  const mine = await must(api("GET", "/api/v1/access-grants?active=true", dave.token), 200);
  t.same(
    mine.grants.map((g: any) => [g.id, g.agent_selector, g.active]),
    [[grantId, "role=db", true]],
  );
  const expiresAt = Date.parse(mine.grants[0].expires_at);
  const onDb = await terminal(dave.token, "db-1");
  const onWeb = await terminal(dave.token, "web-1");

  const close = await within(onDb.closeFrame, waitMs(20_000), "terminal close frame");
  t.comment(`terminal closed ${close.at - expiresAt} ms after the grant's expiry`);
  t.same([close.code, close.reason], [4403, "scope_changed"]);
  t.ok(close.at >= expiresAt - 50, "not before the expiry");
  const alive = marker();
  onWeb.sendBinary(`touch ${alive}\r`);
  await eventually(() => existsSync(alive), 10_000);
  onWeb.destroy();
  onDb.destroy();

  t.equal((await api("GET", "/api/v1/agents/db-1", dave.token)).status, 404, "after: out of reach again");
  problem(t, await api("POST", "/api/v1/terminal/db-1", dave.token), 404, "agent_not_found");
  const expired = await eventually(async () =>
    (await events("access.expired")).find((e) => e.metadata.grant_id === grantId),
  );
  t.equal(expired.target.name, "dave");
  const grantedEv = (await events("access.granted")).find((e) => e.metadata.grant_id === grantId);
  t.equal(grantedEv.actor.name, "erin", "granted by the approver");
  t.same(
    (await must(api("GET", "/api/v1/access-grants", dave.token), 200)).grants.find((g: any) => g.id === grantId)
      .end_reason,
    "expired",
  );
});

t.test("a grant revoked early closes its terminal at once; the holder cannot revoke twice", async (t) => {
  const grantId = await granted(600);
  const onDb = await terminal(dave.token, "db-1");
  const since = Date.now();
  problem(t, await api("POST", `/api/v1/access-grants/${grantId}/revoke`, erin.token, {}), 403, "not_change_requester");
  const g = await must(api("POST", `/api/v1/access-grants/${grantId}/revoke`, admin, { comment: "done" }), 200);
  t.same([g.active, g.end_reason], [false, "revoked"]);
  const close = await within(onDb.closeFrame, waitMs(10_000), "terminal close frame");
  t.comment(`terminal closed ${close.at - since} ms after the revocation`);
  t.same([close.code, close.reason], [4403, "scope_changed"]);
  onDb.destroy();
  problem(t, await api("POST", `/api/v1/access-grants/${grantId}/revoke`, admin, {}), 409, "access_grant_ended");
  problem(t, await api("POST", "/api/v1/access-grants/01NOPE/revoke", admin, {}), 404, "access_grant_not_found");
  const revoked = await eventually(async () =>
    (await events("access.revoked")).find((e) => e.metadata.grant_id === grantId),
  );
  t.equal(revoked.actor.name, "admin");
});

t.test("the admin role for a while: admin routes open, then close again", async (t) => {
  t.equal((await api("GET", "/api/v1/identity-providers", dave.token)).status, 403, "before: an operator");
  const cr = await must(
    api("POST", "/api/v1/access-requests", dave.token, { role: "admin", reason: "rotate keys", duration_seconds: 3 }),
    201,
  );
  await must(api("POST", `/api/v1/change-requests/${cr.id}/approve`, erin.token, {}), 200);
  t.equal((await api("GET", "/api/v1/identity-providers", dave.token)).status, 200, "granted: admin routes open");
  await eventually(async () => (await api("GET", "/api/v1/identity-providers", dave.token)).status === 403, 15_000);
  t.pass("expired: admin routes refuse again");
});

t.test("orchctl access request | grants | revoke, as the holder", async (t) => {
  const pem = join(work, "dave.pem");
  writeFileSync(pem, dave.key.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  const env = { ORCHCTL_HOME: join(work, "dave-home"), HOME: work };
  const orchctl = (...args: string[]) => cli(args, env);
  t.equal((await cli(["--server", system.url, "login", "--key", pem], env)).code, 0);

  const tooLong = await orchctl("access", "request", "--selector", "role=db", "--for", "1h", "--reason", "x");
  t.not(tooLong.code, 0);
  t.match(tooLong.stderr, /access_duration_too_long|at most 600/);
  const badRole = await orchctl("access", "request", "--role", "root", "--for", "5m", "--reason", "x");
  t.not(badRole.code, 0);
  t.match(badRole.stderr, /--role may only be admin/);

  const asked = await orchctl(
    "--json",
    "access",
    "request",
    "--agents",
    "db-1",
    "--for",
    "5m",
    "--reason",
    "disk full",
  );
  t.equal(asked.code, 0, asked.stderr);
  const cr = JSON.parse(asked.stdout);
  t.equal(cr.content.agent_selector, "name in (db-1)", "--agents names the agents");
  t.equal(cr.content.duration_seconds, 300);
  const done = await must(api("POST", `/api/v1/change-requests/${cr.id}/approve`, erin.token, {}), 200);

  const listed = JSON.parse((await orchctl("--json", "access", "grants", "--active")).stdout);
  t.same(
    listed.grants.map((g: any) => [g.id, g.agent_selector]),
    [[done.result, "name in (db-1)"]],
  );
  const table = await orchctl("access", "grants", "--active");
  t.match(table.stdout, /^ID\s+OPERATOR\s+SELECTOR\s+ROLE\s+EXPIRES\s+STATUS/);
  t.match(table.stdout, /dave\s+name in \(db-1\)\s+-\s+\S+\s+active/);
  t.equal((await api("GET", "/api/v1/agents/db-1", dave.token)).status, 200);

  const revoked = await orchctl("access", "revoke", done.result, "--comment", "fixed");
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(revoked.stdout, /Revoked access grant/);
  t.equal(JSON.parse((await orchctl("--json", "access", "grants", "--active")).stdout).grants.length, 0);
  t.equal((await api("GET", "/api/v1/agents/db-1", dave.token)).status, 404, "out of reach again");
});

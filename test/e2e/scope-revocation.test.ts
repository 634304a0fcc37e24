import t, { type Test } from "tap";
import { sign } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, ed25519, eventually, freePort, waitMs, within } from "@orch/kit/testing";
import { startNats, startSystem, type KeyPair } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";
import { openSse, type SseStream } from "../../services/audit/test/sse.js";
import { rawAttach, type RawWs } from "./lib/raw-ws.js";

// Scope is enforced continuously (docs/access.md), with real processes: auth, agents, terminal,
// audit, secrets, state and the gateway, and two real orch-agents with real PTYs. A scoped
// operator's terminal on an agent closes within 2 s when an admin retags the agent out of the
// operator's scope (close 4403 agent_out_of_scope), or changes the operator's own scope so that it
// no longer covers the agent (4403 scope_changed); the client keeps typing and a marker file proves
// none of it reaches the shell. What the new scope still allows stays open. A fleet command's run
// stream showing an agent that leaves the scope ends with an error event naming the reason.
// Needs `npm run build` (every service's dist/main.js and agent/dist/main.js).
//
// The 2 s (docs/terminal.md, docs/access.md) is the bound of the mechanism, not asserted here: the
// only slow way for these ends to happen, the gateway's periodic re-validation, is an hour away in
// this configuration, so an end with its reason proves the change was heard (the audit feed, the
// operator change) at any machine speed; how long it took is printed, not asserted.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const work = mkdtempSync(join(tmpdir(), "orch-e2e-scope-"));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "terminal", "audit", "secrets", "state", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_TERMINAL_TRANSCRIPT_DIR: join(work, "transcripts"),
    ORCH_TERMINAL_OPEN_TIMEOUT_SECONDS: "10",
    ORCH_SECRETS_KEYS: `k1:${Buffer.alloc(32, 31).toString("base64")}`,
    ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
    ORCH_GATEWAY_OPERATORS_MAY_RUN_COMMANDS: "true",
    // The periodic re-validation (reach included), the fallback for an unheard change, out of the way.
    ORCH_GATEWAY_TOKEN_CACHE_TTL_MS: String(3_600_000),
  },
  // Seven services on a shared machine take a while to start.
  readyTimeoutMs: 90_000,
});
const agents = agentPool();
t.teardown(async () => {
  await agents.stop();
});
const gw = system.url;

async function api(method: string, path: string, token?: string, body?: unknown) {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const init: RequestInit = { method, headers, signal: AbortSignal.timeout(30_000) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(`${gw}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}

async function login(key: KeyPair): Promise<string> {
  const ch = await api("POST", "/api/v1/auth/challenge", undefined, { public_key: key.publicKeyHex });
  if (ch.status !== 200) throw new Error(`challenge: ${ch.status} ${ch.text}`);
  const signature = sign(null, Buffer.from(ch.body.nonce, "hex"), key.privateKey).toString("hex");
  const v = await api("POST", "/api/v1/auth/verify", undefined, {
    public_key: key.publicKeyHex,
    nonce: ch.body.nonce,
    signature,
  });
  if (v.status !== 200) throw new Error(`verify: ${v.status} ${v.text}`);
  return v.body.token as string;
}

const admin = await login(system.admin);

/** An approved agent named `name`, tagged role=`role`. */
async function agent(name: string, role: string): Promise<string> {
  const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--shell", "/bin/sh"]);
  const nodeId = await proc.nodeId();
  await eventually(async () => (await api("GET", `/api/v1/agents/${nodeId}`, admin)).body?.connected === true, 20_000);
  const approved = await api("POST", `/api/v1/agents/${nodeId}`, admin, { status: "approved", name });
  if (approved.status !== 200) throw new Error(`approve: ${approved.status} ${approved.text}`);
  await retag(name, role);
  return nodeId;
}

async function retag(name: string, role: string) {
  const r = await api("PUT", `/api/v1/agents/${name}/tags`, admin, { tags: { role } });
  if (r.status !== 200) throw new Error(`tags: ${r.status} ${r.text}`);
}

await agent("agent-1", "web");
await agent("agent-2", "db");

let operators = 0;
/** A scoped operator, logged in. */
async function scopedOperator(selector: string) {
  const key = ed25519();
  const name = `scoped-${++operators}`;
  const body = { name, public_key: key.publicKeyHex, role: "operator", agent_selector: selector };
  const r = await api("POST", "/api/v1/operators", admin, body);
  if (r.status !== 201) throw new Error(`create operator: ${r.status} ${r.text}`);
  return { name, token: await login(key) };
}

let markers = 0;
const marker = () => join(work, `marker-${++markers}`);

/** A terminal on `agent`, attached with the bearer token or the ticket alone; proven to run input. */
async function terminal(token: string, agentName: string, o: { bearer: boolean }): Promise<RawWs> {
  const r = await api("POST", `/api/v1/terminal/${agentName}`, token);
  if (r.status !== 201) throw new Error(`open terminal: ${r.status} ${r.text}`);
  const ws = await rawAttach(r.body.ws_url, o.bearer ? token : undefined);
  const before = marker();
  ws.sendBinary(`touch ${before}\r`);
  await eventually(() => existsSync(before), 10_000);
  return ws;
}

/** The terminal got close 4403 `reason` after the change at `since`; what is typed after never runs. */
async function terminalEnded(t: Test, ws: RawWs, reason: string, since: number) {
  const close = await within(ws.closeFrame, waitMs(10_000), "terminal close frame");
  t.comment(`terminal closed ${close.at - since} ms after the change`);
  t.same([close.code, close.reason], [4403, reason], `close 4403 ${reason}`);
  const after = marker();
  for (let i = 0; i < 5; i++) {
    ws.sendBinary(`touch ${after}\r`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await within(ws.ended, waitMs(5_000), "the gateway drops an unresponsive client");
  await new Promise((r) => setTimeout(r, 1_000));
  t.notOk(existsSync(after), "input typed after the close never reached the shell");
}

/** `ws` is still attached and its input still runs. */
async function stillRunning(t: Test, ws: RawWs, what: string) {
  const alive = marker();
  ws.sendBinary(`touch ${alive}\r`);
  await eventually(() => existsSync(alive), 10_000);
  const closed = await Promise.race([ws.closeFrame, new Promise((r) => setTimeout(() => r(undefined), 200))]);
  t.equal(closed, undefined, `${what}: still open`);
}

/** Each test starts from agent-1 role=web, agent-2 role=db, whatever an earlier one left. */
async function resetTags() {
  await retag("agent-1", "web");
  await retag("agent-2", "db");
}

t.test("the finding: an agent retagged out of the operator's scope closes its terminals", async (t) => {
  await resetTags();
  const wendy = await scopedOperator("role=web");
  const bearer = await terminal(wendy.token, "agent-1", { bearer: true });
  const ticketOnly = await terminal(wendy.token, "agent-1", { bearer: false });
  const audit = await openSse(`${gw}/api/v1/audit/stream?event_type=agent.tags.updated`, { token: wendy.token });
  t.equal(audit.status, 200, "the audit stream (not scope-filtered) is open");

  const since = Date.now();
  await retag("agent-1", "db");
  t.equal((await api("GET", "/api/v1/agents/agent-1", wendy.token)).status, 404, "the API says 404 at once");
  await Promise.all([
    terminalEnded(t, bearer, "agent_out_of_scope", since),
    terminalEnded(t, ticketOnly, "agent_out_of_scope", since),
  ]);
  await audit.waitFor(1);
  t.same(
    audit.events.map((e) => e.event),
    ["audit"],
    "the audit stream concerns no agent: it delivered the retag and stays open",
  );
  audit.close();
});

t.test("an admin changing the operator's scope closes what the new scope excludes, only that", async (t) => {
  await resetTags();
  const sam = await scopedOperator("role in (web,db)");
  const onWeb = await terminal(sam.token, "agent-1", { bearer: true });
  const onDb = await terminal(sam.token, "agent-2", { bearer: false });

  const since = Date.now();
  const r = await api("PATCH", `/api/v1/operators/${sam.name}`, admin, { agent_selector: "role=db" });
  t.equal(r.status, 200);
  await terminalEnded(t, onWeb, "scope_changed", since);
  await stillRunning(t, onDb, "the terminal on the agent the new scope keeps");
  t.equal((await api("GET", "/api/v1/auth/whoami", sam.token)).status, 200, "the operator's token stays valid");
  onDb.destroy();
});

t.test("a fleet command's run stream ends when an agent it shows leaves the scope", async (t) => {
  await resetTags();
  const rita = await scopedOperator("role=web");
  const started = await api("POST", "/api/v1/runs", rita.token, { node_ids: ["agent-1"], command: ["sleep", "60"] });
  t.equal(started.status, 202, "run started");
  t.equal(started.body.status, "running", "the run is under way on agent-1");
  const stream: SseStream = await openSse(`${gw}/api/v1/runs/${started.body.id}/stream`, { token: rita.token });
  t.equal(stream.status, 200);
  await stream.waitFor(1);
  t.equal(stream.events[0]?.event, "run");

  const since = Date.now();
  await retag("agent-1", "db");
  await within(stream.ended, waitMs(10_000), "run stream end");
  t.comment(`the stream ended ${Date.now() - since} ms after the retag`);
  const last = stream.events.at(-1);
  t.equal(last?.event, "error", "the last event is an error event");
  t.equal(last?.data?.code, "agent_out_of_scope");
  await api("POST", `/api/v1/runs/${started.body.id}/cancel`, admin);
});

import t from "tap";
import pg from "pg";
import { AgentControlService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool, collectEvents } from "../../services/agents/test/harness.js";

// Agents and the link end to end with real processes: auth + agents (+ a second agents replica) + gateway and
// real orch-agent daemons, driven through the HTTP API. Needs `npm run build` (dist/main.js files).
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
// Unicast discovery: only to agents.discovery_port, inside agents.discovery_networks (loopback here).
const discoveryPort = await freePort();
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_AGENTS_DISCOVERY_PORT: String(discoveryPort),
    ORCH_AGENTS_DISCOVERY_NETWORKS: "127.0.0.0/8",
    // Short replica liveness so the lost-replica sweep shows within the test.
    ORCH_AGENTS_REPLICA_HEARTBEAT_SECONDS: "1",
    ORCH_AGENTS_REPLICA_TIMEOUT_SECONDS: "4",
  },
});
const agents = agentPool();
const nc = await nats.connect("e2e");
const ev = collectEvents(nc);
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(async () => {
  await agents.stop();
  await sql.end();
});
const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, path, { token, ...(body !== undefined ? { body } : {}) });
const agent = async (id: string) => (await api("GET", `/api/v1/agents/${id}`)).body;
const online = (id: string) => eventually(async () => (await agent(id))?.connected === true, 20_000);
const replicaOf = async (id: string) =>
  (await sql.query("SELECT replica FROM agents.agents WHERE node_id = $1", [id])).rows[0]?.replica as
    | string
    | undefined;
const ping = (id: string) =>
  rpcClient(nc, "", AgentControlService, { timeoutMs: 5000, subjectBase: `orch.agent.${id}` }).ping({
    payload: `hi ${id}`,
  });
const server = `127.0.0.1:${linkPort}`;

let web = agents.spawn(["--server", server, "--metrics-interval", "1"]);
const bad = agents.spawn(["--server", server, "--no-terminal"]);
const webId = await web.nodeId();
const badId = await bad.nodeId();

t.test("agents appear pending with their attributes", async (t) => {
  await online(webId);
  await online(badId);
  const list = await api("GET", "/api/v1/agents?status=pending");
  t.equal(list.status, 200);
  const ids = list.body.agents.map((a: { node_id: string }) => a.node_id);
  t.ok(ids.includes(webId) && ids.includes(badId), "both listed as pending");
  const a = await agent(webId);
  t.match(a, { status: "pending", name: null, connected: true, version: "0.1.0" });
  for (const k of ["hostname", "os", "arch", "cpus", "memory_bytes", "agent_version"])
    t.ok(a.attributes[k], `attribute ${k} = ${a.attributes[k]}`);
  t.equal((await agent(badId)).attributes.terminal_enabled, "false");
  const attrs = await api("GET", `/api/v1/agents/${webId}/attributes`);
  t.equal(attrs.body.attributes.agent_version, "0.1.0");
});

t.test("approve one with a name; reject another, which then cannot connect; delete it", async (t) => {
  const ok = await api("POST", `/api/v1/agents/${webId}`, { status: "approved", name: "web-1" });
  t.equal(ok.status, 200);
  t.match(ok.body, { status: "approved", name: "web-1" });
  t.equal(
    (await api("POST", `/api/v1/agents/${webId}`, { status: "approved", name: "web-2" })).body.code,
    "name_immutable",
  );
  t.equal(
    (await api("POST", `/api/v1/agents/${badId}`, { status: "approved", name: "web-1" })).body.code,
    "name_taken",
  );
  t.equal((await api("POST", `/api/v1/agents/${badId}`, { status: "approved" })).status, 400, "approve needs a name");

  t.equal((await api("POST", `/api/v1/agents/${badId}`, { status: "rejected", name: "whatever" })).status, 200);
  await bad.waitFor((r) => /REJECTED/.test(String(r.msg)));
  t.equal((await agent(badId)).connected, false, "the rejected agent's link is closed");
  const retry = agents.spawn(["--server", server], { dataDir: bad.dataDir });
  await bad.signal("SIGKILL");
  await retry.waitFor((r) => /REJECTED/.test(String(r.msg)));
  t.equal((await agent(badId)).connected, false, "a restarted rejected agent is refused at the handshake");
  await retry.signal("SIGKILL");

  t.equal((await api("DELETE", `/api/v1/agents/${webId}`)).body.code, "agent_not_rejected");
  t.equal((await api("DELETE", `/api/v1/agents/${badId}`)).status, 204);
  t.equal((await api("GET", `/api/v1/agents/${badId}`)).status, 404);
  await ev.wait("agent.approved", webId);
  await ev.wait("agent.rejected", badId);
  await ev.wait("agent.removed", badId);
});

t.test("tags: set, replace, delete, and GET /tags", async (t) => {
  t.same((await api("PUT", `/api/v1/agents/${webId}/tags/env`, { value: "prod" })).body.tags, { env: "prod" });
  t.same((await api("PUT", `/api/v1/agents/${webId}/tags`, { tags: { env: "staging", role: "web" } })).body.tags, {
    env: "staging",
    role: "web",
  });
  t.same((await api("DELETE", `/api/v1/agents/web-1/tags/env`)).body.tags, { role: "web" }, "by name too");
  t.equal((await api("PUT", `/api/v1/agents/${webId}/tags/Bad`, { value: "x" })).status, 400);
  t.same((await api("GET", "/api/v1/tags")).body.tags, { role: ["web"] });
  await ev.wait("agent.tags.updated", webId);
});

t.test("metrics: at least 3 points after 3 short intervals; latest is the newest", async (t) => {
  const hist = await eventually(async () => {
    const r = await api("GET", `/api/v1/agents/${webId}/metrics`);
    return r.body.samples?.length >= 3 ? r.body : undefined;
  }, 20_000);
  const latest = (await api("GET", `/api/v1/agents/${webId}/metrics/latest`)).body;
  const newest = (await api("GET", `/api/v1/agents/${webId}/metrics?limit=1`)).body.samples[0];
  t.equal(latest.taken_at, newest.taken_at);
  t.equal(latest.memory_total, newest.memory_total);
  t.ok(Date.parse(hist.samples[0].taken_at) > Date.parse(hist.samples[2].taken_at), "newest first");
});

t.test("Ping reaches the approved agent through NATS", async (t) => {
  t.match(await ping(webId), { payload: `hi ${webId}`, nodeId: webId });
});

t.test("kill an agent: connected:false within 30 s and agent.disconnected; restart: same node id", async (t) => {
  await web.signal("SIGKILL");
  await eventually(async () => (await agent(webId)).connected === false, 30_000);
  const e = await ev.wait("agent.disconnected", webId);
  t.equal(e.severity, "warning", "an approved agent dropping is a warning");
  web = agents.spawn(["--server", server, "--metrics-interval", "1"], { dataDir: web.dataDir });
  t.equal(await web.nodeId(), webId);
  await online(webId);
  t.match(await ping(webId), { nodeId: webId });
});

let discoveredId = "";
let discovered: ReturnType<typeof agents.spawn> | undefined;
t.test("discovery: an agent with --discover connects after POST /discover and shows up pending", async (t) => {
  const udp = discoveryPort;
  const d = agents.spawn(["--discover", "--discovery-port", String(udp)]);
  discovered = d;
  discoveredId = await d.nodeId();
  await d.waitFor((r) => r.msg === "waiting for a discovery datagram");
  const r = await api("POST", "/api/v1/discover", { target: `127.0.0.1:${udp}` });
  t.equal(r.status, 202);
  t.match(r.body, { sent_to: [`127.0.0.1:${udp}`], announced: server });
  await online(discoveredId);
  t.equal((await agent(discoveredId)).status, "pending");
  await ev.wait("discovery.sent");
});

t.test("restart the agents service: every agent reconnects, with jitter", async (t) => {
  const before = (id: string) => ev.of("agent.connected", id).length;
  const counts = { web: before(webId), disc: before(discoveredId) };
  const oldReplica = await replicaOf(webId);
  await system.kill("agents", "SIGKILL");
  await system.start("agents");
  await eventually(
    () =>
      ev.of("agent.connected", webId).length > counts.web &&
      ev.of("agent.connected", discoveredId).length > counts.disc,
    30_000,
  );
  // An agent.connected counted above may be the discovery test's own, delivered late: the proof of
  // a reconnect is the link row naming the new process.
  const newReplica = await eventually(async () => {
    const [w, d] = await Promise.all([replicaOf(webId), replicaOf(discoveredId)]);
    return w !== undefined && w !== oldReplica && d === w ? w : undefined;
  }, 30_000);
  t.not(newReplica, oldReplica, "held by the new process");
  t.equal(await replicaOf(discoveredId), newReplica, "both agents on the new process");
  await online(webId);
  await online(discoveredId);
  t.match(await ping(webId), { nodeId: webId });
  for (const p of [web, discovered!]) {
    const waits = p
      .records()
      .filter((r) => r.msg === "link lost; reconnecting" || r.msg === "could not connect; retrying")
      .map((r) => r.retry_in_ms as number);
    t.ok(waits.length >= 1, "the agent logged its reconnect attempts");
    for (const [i, w] of waits.entries())
      t.ok(
        w >= 0 && w < Math.min(30_000, 500 * 2 ** i),
        `attempt ${i + 1} waited a random ${w} ms inside its backoff window`,
      );
  }
});

t.test("two agents-service processes: agents spread over both, Ping reaches each", async (t) => {
  const port2 = await freePort();
  await system.start("agents", { ORCH_AGENTS_LINK_PORT: String(port2) }, "agents-2");
  const other = agents.spawn(["--server", `127.0.0.1:${port2}`]);
  const otherId = await other.nodeId();
  await online(otherId);
  t.equal(
    (await api("POST", `/api/v1/agents/${otherId}`, { status: "approved", name: "db-1" })).status,
    200,
    "approval works whichever replica holds the link",
  );
  const r1 = await replicaOf(webId);
  const r2 = await replicaOf(otherId);
  t.ok(r1 && r2 && r1 !== r2, `held by different replicas (${r1} / ${r2})`);
  for (let i = 0; i < 3; i++) {
    t.match(await ping(otherId), { nodeId: otherId });
    t.match(await ping(webId), { nodeId: webId });
  }
  // The second replica dies hard: its agent cannot reconnect (it only knows that port), and the
  // surviving replica's sweep marks it disconnected instead of leaving it "connected" forever.
  await system.kill("agents-2", "SIGKILL");
  await eventually(async () => (await agent(otherId)).connected === false, 30_000);
  t.equal((await agent(webId)).connected, true, "the other replica's agents are untouched");
});

t.test("no private key material in any service log", async (t) => {
  const out = system.output();
  t.notMatch(out, /PRIVATE KEY/);
});

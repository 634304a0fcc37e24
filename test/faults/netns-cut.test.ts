import t from "tap";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { netnsAgents } from "./lib/netns-agents.js";

// The partition tool itself: agents in their own network namespaces connect through the bridge, a
// cut silences one host's link without a reset, the agents service notices it only through its
// keepalive (keepalive_seconds 10 + keepalive_timeout_seconds 5, the defaults), and a restore
// brings the same process back without a restart.

if (process.getuid?.() !== 0) {
  t.fail("run as root: this test makes network namespaces and a bridge");
  process.exit(1);
}

const KEEPALIVE_S = 10;
const KEEPALIVE_TIMEOUT_S = 5;

const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "gateway"],
  // Started next to other suites on a busy machine: the default 30 s is not always enough.
  readyTimeoutMs: 60_000,
  env: { ORCH_AGENTS_LINK_HOST: "127.0.0.1", ORCH_AGENTS_LINK_PORT: String(linkPort), ORCH_LOG_LEVEL: "warn" },
});
const token = await system.login(system.admin);
const connected = async (nodeId: string) =>
  (await system.api("GET", `/api/v1/agents/${nodeId}`, { token })).body?.connected as boolean | undefined;

const hosts = netnsAgents();
const spawned = await hosts.spawn({ linkPort, count: 2 });
t.teardown(() => spawned.stop());
const [kept, cut] = spawned.agents as [(typeof spawned.agents)[0], (typeof spawned.agents)[0]];

t.test("agents in namespaces connect through the bridge", async (t) => {
  t.same(
    spawned.agents.map((a) => a.host),
    [1, 2],
  );
  for (const a of spawned.agents) await eventually(async () => (await connected(a.nodeId)) === true, 30_000);
  const netns = hosts.agents().map((a) => a.host.ns);
  t.equal(new Set(netns).size, 2, "each agent has its own namespace");
});

t.test("a cut is noticed by keepalive only; restore reconnects the same process", async (t) => {
  const agent = hosts.agents().find((a) => a.nodeId === cut.nodeId)!;
  const pid = agent.process.child.pid;
  const t0 = Date.now();
  await hosts.cut([cut.host!]);
  // Silence, not a reset: the server still holds the link right after the cut.
  await new Promise((r) => setTimeout(r, 2000));
  t.equal(await connected(cut.nodeId), true, "2 s after the cut the server has not noticed yet (no RST)");
  await eventually(
    async () => (await connected(cut.nodeId)) === false,
    (KEEPALIVE_S + KEEPALIVE_TIMEOUT_S + 10) * 1000,
    200,
  );
  // Noticed within the wait proves the keepalive: TCP itself gives up a link that drops every frame
  // only after many minutes of retransmissions, if it has anything to send. The time is a figure.
  const detectedS = (Date.now() - t0) / 1000;
  t.comment(`server marked the cut agent disconnected after ${detectedS.toFixed(1)} s`);
  t.equal(await connected(cut.nodeId), false, "the server dropped the silent link (keepalive)");
  t.equal(await connected(kept.nodeId), true, "the other host is untouched");

  const r0 = Date.now();
  const ups = agent.process.records().filter((r) => r.msg === "link up").length;
  await hosts.restore([cut.host!]);
  await eventually(async () => (await connected(cut.nodeId)) === true, 60_000, 200);
  const reconnectS = (Date.now() - r0) / 1000;
  t.comment(`restored agent connected again after ${reconnectS.toFixed(1)} s`);
  t.ok(agent.process.records().filter((r) => r.msg === "link up").length > ups, "the agent logged a new link up");
  t.equal(agent.process.child.pid, pid, "same agent process");
  t.equal(agent.process.child.exitCode, null, "the agent kept running through the partition");
  t.ok(
    agent.process.records().some((r) => r.msg === "link lost; reconnecting" || r.msg === "could not connect; retrying"),
    "the agent saw its link fail",
  );
});

import t from "tap";
import { createTestDatabase, eventually, freePort, startNats } from "@orch/kit/testing";
import {
  agentPool,
  agentsClient,
  collectEvents,
  startAgentsService,
  type AgentsUnderTest,
} from "../../services/agents/test/harness.js";

// A real orch-agent process against the agents service: reconnects, restarts, kills, rejection.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const port = await freePort();
let svc: AgentsUnderTest = await startAgentsService(nats, db, { link_port: port });
const agents = agentPool();
const nc = await nats.connect("observer");
const ev = collectEvents(nc);
const { c, as } = agentsClient(nc);
t.teardown(async () => {
  await agents.stop();
  await svc.stop();
});

const get = (id: string) => c.getAgent({ id }, as).catch(() => undefined);
const server = `127.0.0.1:${port}`;

t.test("attributes and metrics flow while pending", async (t) => {
  const a = agents.spawn(["--server", server, "--no-terminal", "--metrics-interval", "0.3"]);
  const id = await a.nodeId();
  const agent = await eventually(async () => ((await get(id))?.connected ? get(id) : undefined));
  t.equal(agent!.status, "pending");
  t.match(agent!.attributes, { os: "linux", terminal_enabled: "false", agent_version: "0.1.0" });
  for (const k of ["hostname", "kernel", "arch", "cpus", "memory_bytes", "addresses", "distro"])
    t.ok(k in agent!.attributes, `attribute ${k}`);
  t.equal(agent!.version, "0.1.0");
  const samples = await eventually(async () => {
    const s = (await c.getMetrics({ nodeId: id }, as)).samples;
    return s.length >= 3 ? s : undefined;
  });
  t.ok(samples[0]!.takenAt > samples[1]!.takenAt, "newest first");
  t.ok(samples[0]!.memoryTotal > 0);
  await a.signal("SIGTERM");
});

t.test("SIGTERM is a clean shutdown the server records", async (t) => {
  const a = agents.spawn(["--server", server]);
  const id = await a.nodeId();
  await eventually(async () => (await get(id))?.connected);
  a.child.kill("SIGTERM");
  t.equal(await a.exited, 0, "exit code 0");
  const e = await ev.wait("agent.disconnected", id);
  t.equal((e.metadata as { reason: string }).reason, "closed_by_agent");
  t.equal((await get(id))!.connected, false);
  t.ok(a.records().some((r) => r.msg === "orch-agent stopped"));
});

t.test("SIGKILL is noticed at once; a restart keeps the node id", async (t) => {
  const a = agents.spawn(["--server", server]);
  const id = await a.nodeId();
  await eventually(async () => (await get(id))?.connected);
  await a.signal("SIGKILL");
  await eventually(async () => (await get(id))?.connected === false, 30_000);
  const e = await ev.wait("agent.disconnected", id);
  t.equal((e.metadata as { reason: string }).reason, "link_lost");

  const again = agents.spawn(["--server", server], { dataDir: a.dataDir });
  t.equal(await again.nodeId(), id, "same identity from the same data dir");
  await eventually(async () => (await get(id))?.connected);
  t.equal(ev.of("agent.registered", id).length, 1, "not registered twice");
});

t.test("the agent reconnects with backoff when the service goes away and comes back", async (t) => {
  const a = agents.spawn(["--server", server]);
  const id = await a.nodeId();
  await eventually(async () => (await get(id))?.connected);
  // The registry says connected once the Hello arrives; the agent's link is up only once it has read
  // the Welcome. Stopping in between (a busy machine) is a failed connect, not a lost link.
  await eventually(() => a.records().some((x) => x.msg === "link up"), 20_000);
  const oldReplica = svc.svc.replica;
  await svc.stop();
  // Let it fail a few times against a closed port.
  await eventually(() => a.records().filter((x) => x.msg === "could not connect; retrying").length >= 2, 20_000);
  svc = await startAgentsService(nats, db, { link_port: port });
  await eventually(async () => {
    const r = await get(id);
    return (
      r?.connected &&
      (await svc.deps.pool.query("SELECT replica FROM agents WHERE node_id = $1", [id])).rows[0]?.replica ===
        svc.svc.replica
    );
  }, 30_000);
  t.not(svc.svc.replica, oldReplica);
  const waits = a
    .records()
    .filter((r) => typeof r.retry_in_ms === "number")
    .map((r) => r.retry_in_ms as number);
  t.ok(waits.length >= 3, `retried ${waits.length} times`);
  for (const [i, w] of waits.entries())
    t.ok(w >= 0 && w < Math.min(30_000, 500 * 2 ** i), `retry ${i + 1} waited ${w} ms, inside its jitter window`);
  t.ok(
    a.records().some((r) => r.msg === "link lost; reconnecting"),
    "the drop is logged",
  );
});

t.test("a rejected agent is refused, says so, and backs off for minutes", async (t) => {
  const a = agents.spawn(["--server", server]);
  const id = await a.nodeId();
  await eventually(async () => (await get(id))?.connected);
  await c.setApproval({ nodeId: id, status: "rejected" }, as);
  const r = await a.waitFor((x) => /REJECTED/.test(String(x.msg)));
  t.equal(r.retry_in_s, 300);
  t.equal(r.level, "error");
  t.equal((await get(id))!.connected, false);

  const restarted = agents.spawn(["--server", server], { dataDir: a.dataDir });
  await a.signal("SIGKILL");
  await restarted.waitFor((x) => /REJECTED/.test(String(x.msg)));
  t.equal((await get(id))!.connected, false, "a fresh process cannot connect either");
});

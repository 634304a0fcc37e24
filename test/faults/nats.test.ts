import { jetstreamManager } from "@nats-io/jetstream";
import { createTestDatabase, startNatsCluster } from "@orch/kit/testing";
import t from "tap";
import { printFigures } from "./lib/figures.js";
import { checkAfterFault } from "./lib/invariants.js";
import { startMixedLoad } from "./lib/load.js";
import {
  clientsByNode,
  killLeader,
  killRandom,
  LONG_PAUSE_MS,
  nodeOfClient,
  nodesRoutingTo,
  pauseNode,
  restartAndCatchUp,
  serverId,
  waitReplicasCurrent,
} from "./lib/nats-faults.js";
import { startFaultStack } from "./lib/stack.js";

// The whole system on a 3-node JetStream cluster with an R3 AUDIT stream, under the steady mixed
// load: SIGKILL the AUDIT stream's leader, then one of the two survivors (the cluster is down to
// one node, without quorum, until both come back), then freeze the node the gateway is attached
// to for longer than RAFT's heartbeat and lost-quorum timeouts. Nothing acknowledged may be lost
// or audited twice, runs must end, clients may only see 503/504 with Retry-After. Needs a build.
const cluster = await startNatsCluster();
const db = await createTestDatabase();
const stack = await startFaultStack({
  name: "nats",
  nats: cluster,
  db,
  agents: 3,
  env: { ORCH_NATS_AUDIT_STREAM_REPLICAS: "3" },
});
t.teardown(async () => {
  await stack.stop();
  await db.drop();
  await cluster.stop();
});

// Assertions come only at the end: tap ends a root test that asserted and then waits long, and
// its teardown would stop the cluster under the scenario.
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const probe = await cluster.connect("fault-probe");
const jsm = await jetstreamManager(probe, { timeout: 5000 });
const before = await jsm.streams.info("AUDIT");
await waitReplicasCurrent(cluster, "AUDIT", 15_000);

// Three write lanes: while the frozen node's route lives (nats-server 2.9 keeps it up, see D29 in
// docs/architecture.md), a live node still sends about half of the RPCs to the services' stale
// queue subscriptions there, so each write after the clients moved is a coin flip; one lane fits
// only ~6 writes of 5 s timeouts into the freeze (all lost 1 time in 64), three lanes ~18.
const load = startMixedLoad(stack, { writeLanes: 3 });
await sleep(3000);
const timings: Record<string, number> = {};

// 1. The AUDIT leader dies: a follower must take over with every acked event.
load.mark("fault");
let from = Date.now();
const leader = await killLeader(cluster, "AUDIT");
const next = await cluster.waitForLeader("AUDIT", 30_000, { except: leader.name });
timings.leaderFailoverMs = Date.now() - from;
load.mark("healed");
await load.recovered();
await sleep(2000);

// 2. A second node dies: one node left, no quorum, so JetStream stops accepting until a restart.
load.mark("fault");
const second = await killRandom(cluster, { except: [leader.name] });
await sleep(5000);
timings.catchUpMs = await restartAndCatchUp(cluster, [leader, second], "AUDIT", 60_000);
load.mark("healed");
await load.recovered();
await sleep(2000);

// 3. The gateway's node freezes: its TCP connections stay open, nothing answers.
const gatewayNode = await nodeOfClient(cluster, "gateway");
const frozen = gatewayNode ?? cluster.node(next);
const frozenId = await serverId(frozen);
const clientsBefore = await clientsByNode(cluster);
load.mark("fault");
from = Date.now();
const pausedAt = from;
const pausing = pauseNode(frozen, LONG_PAUSE_MS).then(() => Date.now());
// Late in the freeze, for the failure message: where the clients went, and which nodes still have a
// route to the frozen one (and so still pick the queue subscriptions its clients had).
await sleep(LONG_PAUSE_MS - 10_000);
const clientsWhileFrozen = await clientsByNode(cluster);
const stillRouting = frozenId ? await nodesRoutingTo(cluster, frozenId) : ["? (no server id)"];
const resumedAt = await pausing;
await waitReplicasCurrent(cluster, "AUDIT", 30_000);
timings.pauseRecoveryMs = Date.now() - from - LONG_PAUSE_MS;
load.mark("healed");
await load.recovered();
await sleep(2000);
const report = await load.stop();

// While the gateway's node is still frozen, the gateway must have left it and served writes again.
const servedWhileFrozen = report.requests.filter(
  (r) => r.kind === "write" && r.status >= 200 && r.status < 300 && r.at >= pausedAt && r.at + r.ms < resumedAt,
);
timings.firstWriteWhileFrozenMs = servedWhileFrozen.length
  ? Math.min(...servedWhileFrozen.map((r) => r.at + r.ms)) - pausedAt
  : -1;

const freezeTarget = `${frozen.name}, ${gatewayNode ? "the gateway's node" : `the AUDIT leader (no connection named gateway found)`}`;
const duringFreeze = report.requests
  .filter((r) => r.kind === "write" && r.at >= pausedAt && r.at < resumedAt)
  .map((r) => `+${r.at - pausedAt}ms ${r.method} ${r.path} ${r.status} ${r.code ?? ""} ${r.ms}ms`);
const after = await jsm.streams.info("AUDIT");
const figures = await checkAfterFault(t, stack, report, {
  scenario: "nats-cluster",
  faults: 3,
  settleMs: 45_000,
});
printFigures(figures);
console.log(`NATS-TIMINGS ${JSON.stringify({ ...timings, killed: [leader.name, second.name], frozen: frozen.name })}`);

t.equal(before.config.num_replicas, 3, "the services created AUDIT with 3 replicas");
t.not(next, leader.name, `AUDIT leadership moved from ${leader.name} to ${next}`);
t.equal(after.config.num_replicas, 3, "AUDIT is still R3");
t.ok(after.state.messages >= report.acked.length, `AUDIT holds ${after.state.messages} events`);
t.ok(
  servedWhileFrozen.length > 0,
  `writes succeeded while ${frozen.name} was still frozen (first after ${timings.firstWriteWhileFrozenMs} ms)`,
  { duringFreeze, frozen: freezeTarget, clientsBefore, clientsWhileFrozen, nodesStillRoutingToFrozen: stillRouting },
);
t.comment(`writes while ${frozen.name} was frozen: ${duringFreeze.join(", ")}`);
t.comment(
  `clients before the freeze ${JSON.stringify(clientsBefore)}, late in it ${JSON.stringify(clientsWhileFrozen)}; ` +
    `nodes still routing to ${frozen.name} then: ${stillRouting.join(",") || "none"}`,
);
t.ok(report.terminal.echoes > 0, `terminal echoes: ${JSON.stringify(report.terminal)}`);

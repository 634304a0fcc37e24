import t from "tap";
import { createTestDatabase, eventually, startNats, waitMs } from "@orch/kit/testing";
import { printFigures } from "./lib/figures.js";
import { checkAfterFault } from "./lib/invariants.js";
import { startMixedLoad } from "./lib/load.js";
import { netnsAgents } from "./lib/netns-agents.js";
import { startFaultStack } from "./lib/stack.js";
import type { AckedWrite } from "./lib/types.js";

// A network partition under the steady mixed load: six agents, each in its own network namespace,
// run an assignment apply whose exec sleeps; mid-apply half of them are cut off for 20 s (their
// bridge ports drop every frame, no reset), then the network heals. Needs root and `npm run build`.
//
// The outcome follows from how the services work: the agents service drops a silent link after its
// keepalive (10 s) plus keepalive timeout (5 s), so within 15 s of the cut and before the restore,
// and fails the Execute requests pending on it with agent_disconnected; the state service ends those
// operations `failed` with error_code agent_disconnected at once (not `unreachable`: the agents had them). The agents' answers, written into
// the dead connection when their sleep ends, never arrive (the server closed it), so none of them
// completes after the restore. The other three succeed, the run completes with 3 failures, every
// operation has exactly one audit event, and the healed agents reconnect by themselves and apply again.
//
// Only the keepalive can notice the cut in time: TCP itself gives up a link that drops every frame
// only after many minutes of retransmissions, if it has anything to send at all. So a detection before the restore proves the keepalive at any machine speed; how long it
// took is a figure (printed), and the cut lasts long enough on this machine for it to happen.

if (process.getuid?.() !== 0) {
  t.fail("run as root: this test makes network namespaces and a bridge");
  process.exit(1);
}

const AGENTS = 6;
/** The agents service's keepalive (10 s) + its timeout (5 s), the defaults, with room for this machine's load. */
const CUT_MS = waitMs(20_000);
const SLEEP_S = 10;

const nats = await startNats();
const db = await createTestDatabase();
const hosts = netnsAgents();
const stack = await startFaultStack({ name: "partition", nats, db, agents: AGENTS, spawnAgents: hosts.spawn });
/** What the services and agents said last: explains a failure. */
const dumpLogs = () => {
  for (const p of stack.system.procs.values())
    console.error(`${p.name}: exit ${p.child.exitCode ?? p.child.signalCode ?? "-"}`, p.output.join("").slice(-1500));
  for (const a of hosts.agents()) console.error(`agent ${a.host.ns}:`, a.process.lines.slice(-8).join("\n"));
};
t.teardown(async () => {
  if (!t.passing()) dumpLogs();
  await stack.stop();
  await db.drop();
  await nats.stop();
});

const api = async (method: string, path: string, body?: unknown) => {
  try {
    return await stack.system.api(method, `/api/v1${path}`, {
      token: stack.token,
      ...(body !== undefined ? { body } : {}),
    });
  } catch (err) {
    dumpLogs();
    throw new Error(`${method} ${path}: ${(err as Error).message} (${(err as Error).cause})`, { cause: err });
  }
};
const must = async (method: string, path: string, body: unknown, status: number) => {
  const r = await api(method, path, body);
  if (r.status !== status) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
  return r.body;
};
const connected = async (nodeId: string) => (await api("GET", `/agents/${nodeId}`)).body?.connected === true;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const secs = (ms: number) => Math.round(ms / 100) / 10;

// No assertion before the scenario is over: tap would end the root test at the first idle moment.
// The load's terminal uses the first agent: it stays on the connected side.
const kept = stack.agents.slice(0, AGENTS / 2);
const cut = stack.agents.slice(AGENTS / 2);

await must(
  "POST",
  "/modules",
  {
    name: "partition-slow",
    content: `name: partition-slow\nresources:\n  - { id: slow, type: exec, command: 'sleep ${SLEEP_S}' }\n`,
  },
  201,
);
await must(
  "POST",
  "/modules",
  {
    name: "partition-quick",
    content: "name: partition-quick\nresources:\n  - { id: quick, type: exec, command: 'true' }\n",
  },
  201,
);
await must("POST", "/assignments", { name: "partition", selector: "fault=on", modules: ["partition-slow"] }, 201);
await must(
  "POST",
  "/assignments",
  { name: "partition-after", selector: "fault=on", modules: ["partition-quick"] },
  201,
);

const load = startMixedLoad(stack);
await pause(3000);

// The apply across all six, and the moment every operation was sent to its agent.
const run = await must("POST", "/assignments/partition/apply", {}, 202);
const runId = run.run_id as string;
const runPath = `/assignments/partition/runs/${runId}`;
await eventually(
  async () => {
    const r = await api("GET", runPath);
    return r.status === 200 && (r.body.operations as Array<{ status: string }>).every((o) => o.status === "running");
  },
  15_000,
  100,
);

const cutAt = Date.now();
load.mark("fault");
await hosts.cut(cut.map((a) => a.host!));
// How long until the server marks each cut agent disconnected (polled until the restore).
const detectedMs = new Map<string, number>();
while (Date.now() - cutAt < CUT_MS) {
  for (const a of cut)
    if (!detectedMs.has(a.nodeId) && !(await connected(a.nodeId))) detectedMs.set(a.nodeId, Date.now() - cutAt);
  await pause(250);
}
const keptWhileCut = await Promise.all(kept.map((a) => connected(a.nodeId)));
await hosts.restore(cut.map((a) => a.host!));
const restoredAt = Date.now();
load.mark("healed");

// Reconnection: each healed agent, without a restart, until the server sees it connected again.
const reconnectMs = new Map<string, number>();
await eventually(
  async () => {
    for (const a of cut)
      if (!reconnectMs.has(a.nodeId) && (await connected(a.nodeId))) reconnectMs.set(a.nodeId, Date.now() - restoredAt);
    return reconnectMs.size === cut.length;
  },
  60_000,
  200,
).catch(() => undefined);

// The run ends by itself (the kept agents' sleep is long over; the cut ones ended at detection).
const ended = await eventually(
  async () => {
    const r = await api("GET", runPath);
    return r.status === 200 && r.body.status !== "running" ? r.body : undefined;
  },
  30_000,
  250,
).catch(async () => (await api("GET", runPath)).body);

// The healed fleet works again: an apply on all six agents, right after they reconnected.
const afterT0 = Date.now();
const after = await api("POST", "/assignments/partition-after/apply?wait=60", {});
const afterMs = Date.now() - afterT0;
const report = await load.stop();
report.acked.push(
  ...(["partition", "partition-after"].map((name) => ({
    kind: "assignment.applied",
    checkPath: `/api/v1/assignments/${name}`,
    auditType: "assignment.applied",
    resourceId: name,
  })) satisfies AckedWrite[]),
);

t.test("the partition was real: silent, noticed by keepalive only, the other side untouched", async (t) => {
  t.same(
    stack.agents.map((a) => a.host),
    [1, 2, 3, 4, 5, 6],
    "every agent runs on its own namespace host",
  );
  t.same(keptWhileCut, [true, true, true], "the agents on the connected side stayed connected");
  t.equal(detectedMs.size, cut.length, "the server marked every cut agent disconnected before the restore");
  for (const [node, ms] of detectedMs) t.comment(`${node}: noticed after ${secs(ms)} s`);
  for (const a of hosts.agents())
    t.equal(a.process.child.exitCode, null, `agent on ${a.host.ns} kept running through the partition`);
});

t.test("every operation ends in its true final state; the run completes", async (t) => {
  t.equal(ended.status, "completed", "the run completed (no max_failures)");
  t.equal(ended.failures, cut.length, "the cut agents count as failures");
  const page = await must("GET", `${runPath}/operations?limit=100`, undefined, 200);
  const byNode = new Map((page.operations as Array<Record<string, any>>).map((o) => [o.node_id as string, o]));
  t.equal(byNode.size, AGENTS, "one operation per agent");
  const spans = [...byNode.values()].map((o) => [Date.parse(o.started_at), Date.parse(o.finished_at)]);
  t.ok(
    spans.every(([s, f]) => s! < cutAt && f! > cutAt),
    "the cut came mid-apply: every operation had started and none had finished",
  );
  for (const a of kept) {
    const o = byNode.get(a.nodeId);
    t.equal(o?.status, "succeeded", `${a.name} (connected) succeeded`);
    t.equal(o?.summary?.changed, 1, `${a.name} ran its exec`);
  }
  for (const a of cut) {
    const o = byNode.get(a.nodeId);
    t.match(
      o,
      { status: "failed", error_code: "agent_disconnected" },
      `${a.name} (cut mid-apply) failed with agent_disconnected when its link was dropped (it had the operation)`,
    );
    const end = Date.parse(o?.finished_at) - cutAt;
    t.ok(
      end >= 0 && Date.parse(o?.finished_at) < restoredAt,
      `${a.name} ended during the cut (+${secs(end)} s), not after it`,
    );
  }
  // Exactly one audit event per operation, whichever way it ended.
  const events: Array<Record<string, any>> = [];
  for (const type of ["state.apply.succeeded", "state.apply.failed"]) {
    const r = await must("GET", `/audit?event_type=${type}&limit=500`, undefined, 200);
    events.push(...(r.events as Array<Record<string, any>>).filter((e) => e.metadata?.run_id === runId));
  }
  const perOp = new Map<string, string[]>();
  for (const e of events)
    perOp.set(e.metadata.operation_id, [...(perOp.get(e.metadata.operation_id) ?? []), e.event_type]);
  t.same(
    [...byNode.values()].map((o) => perOp.get(o.id)?.length ?? 0),
    Array(AGENTS).fill(1),
    "exactly one state.apply.* event per operation",
  );
  t.equal(
    events.filter((e) => e.event_type === "state.apply.failed").length,
    cut.length,
    "three apply failures audited",
  );
});

t.test("the healed agents reconnect by themselves and apply again", async (t) => {
  t.equal(reconnectMs.size, cut.length, "every cut agent connected again by itself (no restart)");
  t.equal(after.status, 200, `the apply after the restore finished (${after.status})`);
  t.equal(after.body?.status, "completed", "and completed");
  t.same(
    (after.body?.operations as Array<{ status: string }> | undefined)?.map((o) => o.status),
    Array(AGENTS).fill("succeeded"),
    "on all six agents",
  );
});

t.test("the invariants hold after the partition", async (t) => {
  printFigures(await checkAfterFault(t, stack, report, { scenario: "partition", faults: 1, settleMs: 45_000 }));
});

const partition = {
  cutSeconds: CUT_MS / 1000,
  detectedSeconds: [...detectedMs.values()].map(secs),
  reconnectedSeconds: [...reconnectMs.values()].map(secs),
  applyAfterRestoreSeconds: secs(afterMs),
  restoreToApplyDoneSeconds: secs(afterT0 + afterMs - restoredAt),
};
console.log(`PARTITION-FIGURES ${JSON.stringify(partition)}`);
t.comment(`partition: ${JSON.stringify(partition)}`);

import t from "tap";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AgentControlService, PingRequestSchema, PingResponseSchema } from "@orch/contracts";
import { OrchError, rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, silentLogger, startNats } from "@orch/kit/testing";
import { grantsDb } from "../src/link/grants.js";
import { sweepOrphans } from "../src/replicas.js";
import { agentPool, agentsClient, collectEvents, memIdentity, startAgentsService, testLink } from "./harness.js";

// orch.agent.<node_id>.<Method> reaches the agent through whichever replica holds its link.
const nats = await startNats();
const db = await createTestDatabase();
const svc = await startAgentsService(nats, db);
const agents = agentPool();
const nc = await nats.connect("caller");
const ev = collectEvents(nc);
const { c, as } = agentsClient(nc);
t.teardown(async () => {
  await agents.stop();
  await svc.stop();
  await db.drop();
  await nats.stop();
});

const control = (nodeId: string, timeoutMs = 3000) =>
  rpcClient(nc, "", AgentControlService, { timeoutMs, subjectBase: `orch.agent.${nodeId}` });

async function failure(p: Promise<unknown>): Promise<OrchError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof OrchError)) throw new Error(`expected an OrchError, got ${String(e)}`);
  return e;
}

t.test("Ping reaches a real orch-agent once approved; pending agents get nothing", async (t) => {
  const a = agents.spawn(["--server", svc.server]);
  const nodeId = await a.nodeId();
  await eventually(async () => (await c.getAgent({ id: nodeId }, as).catch(() => undefined))?.connected);

  const pending = await failure(control(nodeId).ping({ payload: "x" }));
  t.equal(pending.code, "FAILED_PRECONDITION");
  t.equal(pending.reason, "agent_not_approved");

  await c.setApproval({ nodeId, status: "approved", name: "route-1" }, as);
  const pong = await control(nodeId).ping({ payload: "hello" });
  t.equal(pong.payload, "hello");
  t.equal(pong.nodeId, nodeId, "answered by the agent itself");
  t.ok(Math.abs(pong.agentTime - Date.now()) < 60_000);
});

t.test("an approval the link was never told of still lets requests through: the relay asks the registry", async (t) => {
  const a = agents.spawn(["--server", svc.server]);
  const nodeId = await a.nodeId();
  await eventually(async () => (await c.getAgent({ id: nodeId }, as).catch(() => undefined))?.connected);
  t.equal((await failure(control(nodeId).ping({ payload: "x" }))).reason, "agent_not_approved", "pending first");

  // The row changes with no _Status notice: what a notice lost to a timeout leaves behind.
  await svc.deps.pool.query("UPDATE agents SET status = 'approved', name = 'route-silent' WHERE node_id = $1", [
    nodeId,
  ]);
  const pongs = await Promise.all([1, 2, 3].map((i) => control(nodeId).ping({ payload: `p${i}` })));
  t.same(
    pongs.map((p) => p.payload),
    ["p1", "p2", "p3"],
    "answered by the agent, several at once",
  );
  t.equal((await c.getAgent({ id: nodeId }, as)).status, "approved");
});

t.test("an agent nobody holds is unavailable at once (no responders)", async (t) => {
  const e = await failure(control("a".repeat(32), 10_000).ping({ payload: "x" }));
  t.equal(e.code, "UNAVAILABLE");
});

t.test("relay: payload untouched, deadline carried, errors mapped, timeouts and disconnects answered", async (t) => {
  const id = memIdentity();
  let mode: "echo" | "error" | "silent" = "echo";
  const link = testLink(svc.server, id, {
    onRequest(r, send) {
      if (mode === "echo") {
        const req = fromBinary(PingRequestSchema, r.payload);
        send({
          frame: {
            case: "response",
            value: {
              id: r.id,
              payload: toBinary(
                PingResponseSchema,
                create(PingResponseSchema, { payload: `echo:${req.payload}`, nodeId: "fake" }),
              ),
            },
          },
        });
      } else if (mode === "error") {
        send({
          frame: {
            case: "response",
            value: { id: r.id, error: { code: "NOT_FOUND", reason: "session_not_found", message: "no such thing" } },
          },
        });
      }
    },
  });
  await link.up();
  await c.setApproval({ nodeId: id.nodeId, status: "approved", name: "relay-fake" }, as);
  await eventually(() => link.welcomes.some((w) => w.status === "approved"));

  const before = Date.now();
  t.equal((await control(id.nodeId, 4000).ping({ payload: "p" })).payload, "echo:p");
  const r = link.requests.at(-1)!;
  t.equal(r.method, "Ping", "method = last subject token");
  t.ok(
    r.deadline >= before + 3000 && r.deadline <= Date.now() + 4000,
    "deadline comes from the caller's orch-deadline header",
  );

  mode = "error";
  const e = await failure(control(id.nodeId).ping({ payload: "p" }));
  t.equal(e.code, "NOT_FOUND");
  t.equal(e.reason, "session_not_found");
  t.equal(e.message, "no such thing");

  mode = "silent";
  const timedOut = await failure(control(id.nodeId, 300).ping({ payload: "p" }));
  t.equal(timedOut.code, "DEADLINE_EXCEEDED", "a silent agent costs the caller its own timeout, no more");

  // The raw request outlives the link: the relay answers for the agent that went away.
  const raw = nc.request(
    `orch.agent.${id.nodeId}.Ping`,
    toBinary(PingRequestSchema, create(PingRequestSchema, { payload: "p" })),
    { timeout: 10_000 },
  );
  await eventually(() => link.requests.length >= 4);
  link.close();
  const reply = await raw;
  t.equal(reply.headers?.get("orch-error"), "UNAVAILABLE", "pending requests fail when the link drops");
});

t.test("bus bridge: only allowed subjects, both directions, cleaned up with the link", async (t) => {
  const id = memIdentity();
  // As if session s1 had been opened on this agent (grants.test.ts covers how grants are made).
  await grantsDb.put(svc.deps.pool, id.nodeId, { kind: "terminal", ref: "s1" }, Date.now() + 60_000);
  const link = testLink(svc.server, id);
  await link.up();
  const seen: string[] = [];
  const sub = nc.subscribe(">", { callback: (_e, m) => void seen.push(m.subject) });
  await nc.flush();
  link.send()({ frame: { case: "publish", value: { subject: "orch.secrets.Resolve", data: new Uint8Array([1]) } } });
  link.send()({ frame: { case: "publish", value: { subject: "audit.agent.approved", data: new Uint8Array([1]) } } });
  link.send()({ frame: { case: "publish", value: { subject: "orch.term.s1.out", data: new Uint8Array([42]) } } });
  await eventually(() => seen.includes("orch.term.s1.out"));
  t.notOk(seen.includes("orch.secrets.Resolve"), "forbidden publish dropped");
  t.notOk(seen.includes("audit.agent.approved"), "an agent cannot forge audit events");
  sub.unsubscribe();

  link.send()({ frame: { case: "subscribe", value: { subject: "orch.term.s1.in" } } });
  link.send()({ frame: { case: "subscribe", value: { subject: "orch.auth.revoked" } } });
  await eventually(async () => {
    nc.publish("orch.term.s1.in", new Uint8Array([7]));
    await nc.flush();
    return link.messages.length > 0;
  });
  t.equal(link.messages[0]!.subject, "orch.term.s1.in");
  t.same([...link.messages[0]!.data], [7]);
  nc.publish("orch.auth.revoked", new Uint8Array([1]));
  nc.publish("orch.term.s1.in", new Uint8Array([8]));
  await eventually(() => link.messages.some((m) => m.data[0] === 8));
  t.notOk(
    link.messages.some((m) => m.subject === "orch.auth.revoked"),
    "forbidden subscription not made",
  );

  link.close();
  await link.outcome;
  await eventually(async () => {
    const err = await nc.request("orch.term.s1.in", new Uint8Array(), { timeout: 2000 }).then(
      () => undefined,
      (e: Error) => e,
    );
    return (
      err && /no responders/i.test(`${err.message} ${String((err as { cause?: unknown }).cause ?? "")} ${err.name}`)
    );
  });
  t.pass("no subscription is left on the bus after the link ends");
});

t.test("agents of a replica that died are marked disconnected by the sweep", async (t) => {
  const now = Date.now();
  await svc.deps.pool.query(
    `INSERT INTO agents (node_id, public_key, name, status, connected, replica, session, first_seen, last_seen)
     VALUES ($1, $2, 'ghost-1', 'approved', true, 'dead-replica', 's1', $3, $3)`,
    ["b".repeat(32), "c".repeat(64), now],
  );
  const n = await sweepOrphans({
    pool: svc.deps.pool,
    events: svc.deps.events,
    clock: { now: () => now },
    log: silentLogger(),
    replica: svc.svc.replica,
    heartbeatMs: 5000,
    timeoutMs: 20_000,
  });
  t.equal(n, 1);
  t.equal((await c.getAgent({ id: "ghost-1" }, as)).connected, false);
  const e = await ev.wait("agent.disconnected", "b".repeat(32));
  t.equal(e.severity, "warning");
  t.same(e.metadata, { reason: "replica_lost", status: "approved" });
  const live = (await c.listAgents({}, as)).agents.filter((a) => a.connected);
  t.ok(live.length >= 1, "agents held by the live replica are untouched");
});

t.test("stopping a replica closes its links and records the disconnects", async (t) => {
  const second = await startAgentsService(nats, db);
  const id = memIdentity();
  const link = testLink(second.server, id);
  await link.up();
  await second.stop();
  t.match(await link.outcome, { kind: "closed", wasUp: true });
  t.equal((await c.getAgent({ id: id.nodeId }, as)).connected, false);
  const e = await ev.wait("agent.disconnected", id.nodeId);
  t.equal((e.metadata as { reason?: string }).reason, "server_shutdown");
});

import t from "tap";
import { create, toBinary, fromBinary } from "@bufbuild/protobuf";
import {
  AgentStateService,
  AgentTerminalService,
  ExecuteRequestSchema,
  ExecuteResponseSchema,
  OpenTerminalRequestSchema,
  OpenTerminalResponseSchema,
  type Request,
} from "@orch/contracts";
import { OrchError, rpcClient } from "@orch/kit";
import {
  createTestDatabase,
  eventually,
  memoryLogger,
  serviceDeps,
  startNats,
  type NatsHandle,
  type DbHandle,
} from "@orch/kit/testing";
import type { Identity } from "../../../agent/src/identity.js";
import type { Send } from "../../../agent/src/link/client.js";
import { agentsConfigSchema } from "../src/config.js";
import { grantsDb } from "../src/link/grants.js";
import { createAgentsService } from "../src/service.js";
import { AGENTS_MIGRATIONS, agentsClient, linkTlsConfig, memIdentity, testLink, type TestLink } from "./harness.js";

// An agent may use orch.term.<id>.* / orch.state.progress.<id> only for the sessions and
// operations the relay opened on it; grants live in Postgres so they survive a move to another replica.
const nats = await startNats();
const db = await createTestDatabase();
const nc = await nats.connect("observer");
const { c, as } = agentsClient(nc);

/** The agents service in process, its log kept in memory. */
async function replica(n: NatsHandle, d: DbHandle) {
  const { log, lines } = memoryLogger("agents");
  const deps = await serviceDeps({
    name: "agents",
    nats: n,
    db: d,
    schema: "agents",
    migrations: AGENTS_MIGRATIONS,
    log,
    config: agentsConfigSchema.parse({ agents: { link_host: "127.0.0.1", link_port: 0, ...linkTlsConfig() } }),
  });
  const svc = await createAgentsService(deps);
  let stopped = false;
  return {
    deps,
    lines,
    server: `127.0.0.1:${svc.linkPort}`,
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    async stop() {
      if (stopped) return;
      stopped = true;
      await svc.stop();
      await deps.close();
    },
  };
}

const first = await replica(nats, db);
const second = await replica(nats, db);
const links: TestLink[] = [];
t.teardown(async () => {
  for (const l of links) l.close();
  await first.stop();
  await second.stop();
  await nc.close();
  await db.drop();
  await nats.stop();
});

const ok = (r: Request, send: Send, payload: Uint8Array) =>
  send({ frame: { case: "response", value: { id: r.id, payload } } });
const sub = (send: Send, subject: string) => send({ frame: { case: "subscribe", value: { subject } } });
const pub = (send: Send, subject: string, data: Uint8Array | string) =>
  send({ frame: { case: "publish", value: { subject, data: typeof data === "string" ? Buffer.from(data) : data } } });

/**
 * A fake agent over the real link client that behaves like orch-agent: OpenTerminal subscribes the
 * session's .in and .ctl BEFORE answering, Execute publishes progress before answering.
 */
function agentLink(server: string, id: Identity, opts: { failOpen?: (sessionId: string) => boolean } = {}) {
  const link = testLink(server, id, {
    onRequest(r, send) {
      if (r.method === "OpenTerminal") {
        const req = fromBinary(OpenTerminalRequestSchema, r.payload);
        sub(send, `orch.term.${req.sessionId}.in`);
        sub(send, `orch.term.${req.sessionId}.ctl`);
        if (opts.failOpen?.(req.sessionId))
          send({
            frame: {
              case: "response",
              value: {
                id: r.id,
                error: { code: "FAILED_PRECONDITION", reason: "shell_not_found", message: "no shell" },
              },
            },
          });
        else
          ok(
            r,
            send,
            toBinary(OpenTerminalResponseSchema, create(OpenTerminalResponseSchema, { pid: 4242, shell: "/bin/sh" })),
          );
      } else if (r.method === "Execute") {
        const req = fromBinary(ExecuteRequestSchema, r.payload);
        pub(send, `orch.state.progress.${req.operationId}`, JSON.stringify({ id: "r1", status: "ok" }));
        ok(r, send, toBinary(ExecuteResponseSchema, create(ExecuteResponseSchema, {})));
      }
    },
  });
  links.push(link);
  return link;
}

async function approved(id: Identity, link: TestLink, name: string) {
  await link.up();
  await c.setApproval({ nodeId: id.nodeId, status: "approved", name }, as);
  await eventually(() => link.welcomes.some((w) => w.status === "approved"));
}

const terminal = (nodeId: string) =>
  rpcClient(nc, "", AgentTerminalService, { timeoutMs: 5000, subjectBase: `orch.agent.${nodeId}` });
const state = (nodeId: string) =>
  rpcClient(nc, "", AgentStateService, { timeoutMs: 5000, subjectBase: `orch.agent.${nodeId}` });

/** Everything the observer sees on `pattern`, as subject + text. */
function watch(pattern: string) {
  const seen: Array<{ subject: string; text: string }> = [];
  const s = nc.subscribe(pattern, {
    callback: (_e, m) => void seen.push({ subject: m.subject, text: Buffer.from(m.data).toString() }),
  });
  return { seen, stop: () => s.unsubscribe(), ready: () => nc.flush() };
}

/**
 * Proves an agent gets nothing on `forbidden`: the observer publishes `forbidden` then `allowed`
 * (which the agent does receive) from one connection; NATS keeps that order to the relaying
 * replica and the link keeps it to the agent, so had `forbidden` been subscribed it would have
 * arrived first.
 */
async function receivesNothingOn(link: TestLink, forbidden: string, allowed: string) {
  const before = link.messages.length;
  await eventually(async () => {
    nc.publish(forbidden, Buffer.from("leak"));
    nc.publish(allowed, Buffer.from("barrier"));
    await nc.flush();
    return link.messages.slice(before).some((m) => m.subject === allowed);
  });
  return link.messages.filter((m) => m.subject === forbidden).length;
}

const idA = memIdentity();
const idB = memIdentity();
const S = "01SESSIONAAAAAAAAAAAAAAAAA";
const SB = "01SESSIONBBBBBBBBBBBBBBBBB";
let linkA = agentLink(first.server, idA);
const linkB = agentLink(first.server, idB);
await approved(idA, linkA, "grant-a");
await approved(idB, linkB, "grant-b");

t.test("the agent a session was opened on can use it; another agent cannot read, inject or end it", async (t) => {
  t.equal((await terminal(idA.nodeId).openTerminal({ sessionId: S, cols: 80, rows: 24 })).pid, 4242);
  t.equal((await terminal(idB.nodeId).openTerminal({ sessionId: SB })).pid, 4242);
  const row = await first.deps.pool.query("SELECT node_id, kind, ref, expires_at FROM link_grants WHERE ref = $1", [S]);
  t.same(
    row.rows.map((r) => ({ node_id: r.node_id, kind: r.kind })),
    [{ node_id: idA.nodeId, kind: "terminal" }],
    "the grant is stored for A only",
  );
  const hours = (Number(row.rows[0].expires_at) - Date.now()) / 3_600_000;
  t.ok(hours > 23 && hours <= 24, "terminal grants last agents.terminal_grant_hours (24)");

  // A subscribed S.in while its OpenTerminal was still in flight (as orch-agent does): keystrokes reach it.
  await eventually(async () => {
    nc.publish(`orch.term.${S}.in`, Buffer.from("ls\r"));
    await nc.flush();
    return linkA.messages.some((m) => m.subject === `orch.term.${S}.in`);
  });
  const out = watch(`orch.term.${S}.>`);
  const own = watch(`orch.term.${SB}.out`);
  await out.ready();
  pub(linkA.send(), `orch.term.${S}.out`, "from-A");
  await eventually(() => out.seen.some((m) => m.text === "from-A"));

  // B subscribes A's session and tries to write to it, then writes to its own session (the barrier).
  sub(linkB.send(), `orch.term.${S}.in`);
  sub(linkB.send(), `orch.term.${S}.ctl`);
  pub(linkB.send(), `orch.term.${S}.out`, "SECRET-INJECTED-OUTPUT");
  pub(linkB.send(), `orch.term.${S}.ctl`, JSON.stringify({ type: "exit", code: 0, signal: 0, reason: "exit" }));
  pub(linkB.send(), `orch.term.${SB}.out`, "from-B");
  await eventually(() => own.seen.some((m) => m.text === "from-B"));
  t.same(
    out.seen.map((m) => m.text),
    ["from-A"],
    "B's output and exit for A's session never reached the bus",
  );
  out.stop();
  own.stop();

  sub(linkB.send(), `orch.term.${SB}.in`);
  t.equal(await receivesNothingOn(linkB, `orch.term.${S}.in`, `orch.term.${SB}.in`), 0, "B never sees A's keystrokes");
  t.equal(await receivesNothingOn(linkB, `orch.term.${S}.ctl`, `orch.term.${SB}.in`), 0, "nor A's control messages");

  const refusals = first
    .records()
    .filter((r) => r.level === 40 && r.node_id === idB.nodeId && String(r.subject).startsWith(`orch.term.${S}.`));
  t.same(
    new Set(refusals.map((r) => r.subject)),
    new Set([`orch.term.${S}.in`, `orch.term.${S}.ctl`, `orch.term.${S}.out`]),
    "each refusal is a warning naming the node and the subject",
  );
  t.notOk(
    first.lines.some((l) => l.includes("SECRET-INJECTED-OUTPUT")),
    "payloads are never logged",
  );
});

t.test("a failed open withdraws what the agent subscribed while it was in flight", async (t) => {
  const idC = memIdentity();
  const FAILED = "01FAILEDOPEN";
  const SC = "01SESSIONCCCCCCCC";
  const linkC = agentLink(first.server, idC, { failOpen: (id) => id === FAILED });
  await approved(idC, linkC, "grant-c");
  await terminal(idC.nodeId).openTerminal({ sessionId: SC });
  const e = await terminal(idC.nodeId)
    .openTerminal({ sessionId: FAILED })
    .then(
      () => undefined,
      (err: unknown) => err,
    );
  t.ok(e instanceof OrchError && e.reason === "shell_not_found", "the agent's error reaches the caller");
  t.equal(
    (await first.deps.pool.query("SELECT 1 FROM link_grants WHERE ref = $1", [FAILED])).rowCount,
    0,
    "nothing stored",
  );
  t.equal(
    await receivesNothingOn(linkC, `orch.term.${FAILED}.in`, `orch.term.${SC}.in`),
    0,
    "the subscription made during the open is gone",
  );
  sub(linkC.send(), `orch.term.${FAILED}.in`);
  t.equal(
    await receivesNothingOn(linkC, `orch.term.${FAILED}.in`, `orch.term.${SC}.in`),
    0,
    "and cannot be made again",
  );
});

t.test("progress may be published only for an Execute relayed to that agent", async (t) => {
  const progress = watch("orch.state.progress.>");
  await progress.ready();
  await state(idA.nodeId).execute({ operationId: "01OPA", mode: "plan" });
  await state(idB.nodeId).execute({ operationId: "01OPB", mode: "plan" });
  await eventually(() => progress.seen.filter((m) => m.text.includes("r1")).length === 2);
  t.same(
    progress.seen.map((m) => m.subject).sort(),
    ["orch.state.progress.01OPA", "orch.state.progress.01OPB"],
    "each agent's own progress arrives",
  );
  const row = await first.deps.pool.query("SELECT node_id FROM link_grants WHERE kind = 'progress' AND ref = '01OPA'");
  t.same(row.rows, [{ node_id: idA.nodeId }]);

  pub(linkB.send(), "orch.state.progress.01OPA", "forged-by-B");
  pub(linkA.send(), "orch.state.progress.01NEVEREXECUTED", "unasked-by-A");
  pub(linkA.send(), "orch.state.progress.01OPA", "barrier-A");
  pub(linkB.send(), "orch.state.progress.01OPB", "barrier-B");
  await eventually(
    () => progress.seen.some((m) => m.text === "barrier-A") && progress.seen.some((m) => m.text === "barrier-B"),
  );
  t.notOk(
    progress.seen.some((m) => m.text === "forged-by-B"),
    "B cannot forge A's operation progress",
  );
  t.notOk(
    progress.seen.some((m) => m.text === "unasked-by-A"),
    "A cannot publish for an operation never executed on it",
  );
  progress.stop();
});

t.test("after moving to another replica, the agent keeps its sessions (grants from the database)", async (t) => {
  linkA.close();
  await linkA.outcome;
  linkA = agentLink(second.server, idA);
  await linkA.up();
  sub(linkA.send(), `orch.term.${S}.in`);
  sub(linkA.send(), `orch.term.${S}.ctl`);
  await eventually(async () => {
    nc.publish(`orch.term.${S}.in`, Buffer.from("after-move"));
    await nc.flush();
    return linkA.messages.some((m) => Buffer.from(m.data).toString() === "after-move");
  });
  const out = watch(`orch.term.${S}.out`);
  await out.ready();
  pub(linkA.send(), `orch.term.${S}.out`, "resumed");
  await eventually(() => out.seen.some((m) => m.text === "resumed"));
  out.stop();
  t.equal(
    await receivesNothingOn(linkA, `orch.term.${SB}.in`, `orch.term.${S}.in`),
    0,
    "the second replica still refuses B's session to A",
  );

  // Granted elsewhere after this link loaded its grants: found by the lookup on a miss, frames kept in order.
  const S3 = "01SESSIONLATEGRANT";
  await grantsDb.put(second.deps.pool, idA.nodeId, { kind: "terminal", ref: S3 }, Date.now() + 60_000);
  const late = watch(`orch.term.${S3}.out`);
  await late.ready();
  for (let i = 0; i < 50; i++) pub(linkA.send(), `orch.term.${S3}.out`, String(i));
  await eventually(() => late.seen.length === 50);
  t.same(
    late.seen.map((m) => Number(m.text)),
    [...Array(50).keys()],
    "output order survives the lookup",
  );
  late.stop();
});

t.test("when the link drops, each subscribed session gets an exit so its recorder fails it at once", async (t) => {
  const ctl = watch("orch.term.*.ctl");
  await ctl.ready();
  linkA.close();
  await linkA.outcome;
  const exit = await eventually(() => ctl.seen.find((m) => m.subject === `orch.term.${S}.ctl`));
  t.same(
    JSON.parse(exit.text),
    { type: "exit", code: -1, signal: 0, reason: "agent_disconnected" },
    "what services/terminal fails as agent_lost",
  );
  ctl.stop();
});

t.test("a replica that shuts down does not end the sessions of its agents (they reconnect elsewhere)", async (t) => {
  const third = await replica(nats, db);
  t.teardown(() => third.stop());
  const link = agentLink(third.server, idA);
  await link.up();
  sub(link.send(), `orch.term.${S}.ctl`);
  await eventually(async () => {
    nc.publish(`orch.term.${S}.ctl`, Buffer.from(JSON.stringify({ type: "keepalive" })));
    await nc.flush();
    return link.messages.some((m) => m.subject === `orch.term.${S}.ctl`);
  });
  const ctl = watch(`orch.term.${S}.ctl`);
  await ctl.ready();
  await third.stop();
  t.match(await link.outcome, { kind: "closed", wasUp: true });
  // The replica's connection is closed (flushed) by now, so an exit it had published would be here.
  await nc.flush();
  t.notOk(
    ctl.seen.some((m) => m.text.includes("agent_disconnected")),
    "no exit published",
  );
  t.ok(third.records().some((r) => r.msg === "agent link closed" && r.reason === "server_shutdown"));
  ctl.stop();
});

t.test("agents.terminal_grant_hours: 24 by default, must be positive", async (t) => {
  t.equal(agentsConfigSchema.parse({ agents: { insecure: true } }).agents.terminal_grant_hours, 24);
  t.equal(
    agentsConfigSchema.parse({ agents: { insecure: true, terminal_grant_hours: 9 } }).agents.terminal_grant_hours,
    9,
  );
  t.throws(() => agentsConfigSchema.parse({ agents: { insecure: true, terminal_grant_hours: 0 } }));
});

t.test("expired grants are pruned, live ones kept (idempotent)", async (t) => {
  const now = Date.now();
  await grantsDb.put(first.deps.pool, "e".repeat(32), { kind: "terminal", ref: "01OLD" }, now - 1);
  await grantsDb.put(first.deps.pool, "e".repeat(32), { kind: "progress", ref: "01OLDOP" }, now - 1000);
  await grantsDb.put(first.deps.pool, "e".repeat(32), { kind: "terminal", ref: "01LIVE" }, now + 60_000);
  t.equal(await grantsDb.prune(first.deps.pool, now, 1), 2, "in batches");
  t.equal(await grantsDb.prune(first.deps.pool, now), 0);
  t.same(
    (await grantsDb.live(first.deps.pool, "e".repeat(32), now)).map((g) => g.ref),
    ["01LIVE"],
  );
  // A re-grant never shortens a grant.
  await grantsDb.put(first.deps.pool, "e".repeat(32), { kind: "terminal", ref: "01LIVE" }, now + 1000);
  t.equal((await grantsDb.live(first.deps.pool, "e".repeat(32), now))[0]!.expires_at, now + 60_000);
});

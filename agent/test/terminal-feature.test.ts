import t from "tap";
import { randomBytes } from "node:crypto";
import type { NatsConnection } from "@nats-io/transport-node";
import { AgentTerminalService } from "@orch/contracts";
import { OrchError, rpcClient } from "@orch/kit";
import { eventually, startNats } from "@orch/kit/testing";
import { createTerminalFeature } from "../src/terminal/feature.js";
import { startBridgedAgent } from "../../services/terminal/test/agent-bridge.js";

// The agent's terminal feature over real NATS with real PTYs (the link is replaced by a bridge
// that enforces the same subject allow-lists).
const nats = await startNats({ owner: t });
const feature = createTerminalFeature({
  flushBytes: 16 * 1024,
  flushDelayMs: 2,
  holdLimitBytes: 1024 * 1024,
  killGraceMs: 300,
});
const agent = await startBridgedAgent(nats, {
  nodeId: "a".repeat(32),
  features: [feature],
  options: { shells: ["/bin/bash", "/bin/sh"] },
});
const off = await startBridgedAgent(nats, {
  nodeId: "b".repeat(32),
  features: [feature],
  options: { terminalEnabled: false },
});
const nc = await nats.connect("observer");
t.teardown(async () => {
  await agent.stop();
  await off.stop();
});

const client = (nodeId: string) =>
  rpcClient(nc, "", AgentTerminalService, { timeoutMs: 5000, subjectBase: `orch.agent.${nodeId}` });
const sid = () => randomBytes(13).toString("hex").toUpperCase();
const timers = { heartbeatIntervalMs: 100, orphanTimeoutMs: 0, attachTimeoutMs: 30_000, detachGraceMs: 0 };

interface Ctl {
  type: string;
  code?: number;
  reason?: string;
}

/** Watches a session's subjects like the recorder and a client would. */
async function watch(c: NatsConnection, id: string) {
  const w = { out: Buffer.alloc(0), ctl: [] as Ctl[], outMessages: 0 };
  c.subscribe(`orch.term.${id}.out`, {
    callback: (_e, m) => {
      w.out = Buffer.concat([w.out, Buffer.from(m.data)]);
      w.outMessages++;
    },
  });
  c.subscribe(`orch.term.${id}.ctl`, {
    callback: (_e, m) => void w.ctl.push(JSON.parse(Buffer.from(m.data).toString()) as Ctl),
  });
  await c.flush();
  const send = (kind: "in" | "ctl", data: string | object) =>
    c.publish(`orch.term.${id}.${kind}`, Buffer.from(typeof data === "string" ? data : JSON.stringify(data)));
  return {
    w,
    input: (s: string) => send("in", s),
    control: (m: object) => send("ctl", m),
    exit: () => eventually(() => w.ctl.find((m) => m.type === "exit"), 15_000),
    text: () => w.out.toString("utf8"),
  };
}

t.test("advertises terminal_enabled and uses only allowed subjects", async (t) => {
  t.equal(agent.attributes.get("terminal_enabled"), "true");
  t.equal(off.attributes.get("terminal_enabled"), "false");
  t.equal(agent.attributes.get("terminal_shells"), "/bin/bash,/bin/sh");
});

t.test("spawns the shell at the requested size, streams bytes both ways, reports the exit code", async (t) => {
  const id = sid();
  const s = await watch(nc, id);
  const r = await client(agent.nodeId).openTerminal({
    sessionId: id,
    shell: "/bin/bash",
    cols: 100,
    rows: 30,
    ...timers,
  });
  t.equal(r.shell, "/bin/bash");
  t.ok(r.pid > 0);
  s.control({ type: "attach" });
  s.input("stty size; echo marker-$((6*7)); exit 7\r");
  const exit = await s.exit();
  t.equal(exit.code, 7, "exit code of the shell");
  t.equal(exit.reason, "exit");
  t.match(s.text(), /30 100/, "stty size sees the requested rows and cols");
  t.match(s.text(), /marker-42/, "command output arrives on .out");
  t.same(agent.refused, []);
});

t.test("output is held until a client attaches, then flows", async (t) => {
  const id = sid();
  const s = await watch(nc, id);
  await client(agent.nodeId).openTerminal({ sessionId: id, shell: "/bin/sh", cols: 80, rows: 24, ...timers });
  s.input("echo held-$((40+2))\n");
  // Heartbeats prove the session is running; nothing is published before the attach.
  await eventually(() => s.w.ctl.filter((m) => m.type === "heartbeat").length >= 3);
  t.equal(s.w.outMessages, 0, "no output before the attach");
  s.control({ type: "attach" });
  await eventually(() => /held-42/.test(s.text()));
  s.input("exit\n");
  await s.exit();
});

t.test("resize control changes the PTY size", async (t) => {
  const id = sid();
  const s = await watch(nc, id);
  await client(agent.nodeId).openTerminal({ sessionId: id, shell: "/bin/sh", cols: 80, rows: 24, ...timers });
  s.control({ type: "attach" });
  s.control({ type: "resize", cols: 132, rows: 43 });
  s.control({ type: "resize", cols: 5000, rows: 1 }); // out of range: ignored
  s.input("stty size\nexit\n");
  await s.exit();
  t.match(s.text(), /43 132/);
});

t.test("every byte is published before the exit message", async (t) => {
  const id = sid();
  const s = await watch(nc, id);
  await client(agent.nodeId).openTerminal({ sessionId: id, shell: "/bin/sh", cols: 80, rows: 24, ...timers });
  s.control({ type: "attach" });
  s.input("stty -echo; head -c 300000 /dev/zero | tr '\\0' x; exit 3\n");
  const exit = await s.exit();
  t.equal(exit.code, 3);
  const longestRun = Math.max(...(s.text().match(/x+/g) ?? [""]).map((r) => r.length));
  t.equal(longestRun, 300_000, "all 300000 bytes arrived before exit");
  t.ok(s.w.outMessages < 300, `batched into ${s.w.outMessages} messages`);
});

t.test("closing kills the whole session, including jobs that ignore SIGHUP", async (t) => {
  const id = sid();
  const s = await watch(nc, id);
  await client(agent.nodeId).openTerminal({ sessionId: id, shell: "/bin/bash", cols: 80, rows: 24, ...timers });
  s.control({ type: "attach" });
  s.input("(trap '' HUP; exec sleep 1000) & echo bg=$!\r");
  const pid = Number((await eventually(() => /bg=(\d+)/.exec(s.text()), 10_000))[1]);
  t.ok(pid > 0);
  t.doesNotThrow(() => process.kill(pid, 0), "background job runs");
  t.same((await client(agent.nodeId).listTerminals({})).sessionIds.includes(id), true);
  t.same(await client(agent.nodeId).closeTerminal({ sessionId: id, reason: "closed_by_operator" }), {
    $typeName: "orch.v1.CloseTerminalResponse",
    closed: true,
  });
  const exit = await s.exit();
  t.equal(exit.reason, "closed_by_operator");
  await eventually(() => {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  });
  t.pass("the background job is gone");
  t.equal((await client(agent.nodeId).listTerminals({})).sessionIds.includes(id), false);
  t.equal((await client(agent.nodeId).closeTerminal({ sessionId: id, reason: "again" })).closed, false);
});

t.test("close and ended control messages end the session", async (t) => {
  for (const type of ["close", "ended"]) {
    const id = sid();
    const s = await watch(nc, id);
    await client(agent.nodeId).openTerminal({ sessionId: id, shell: "/bin/sh", cols: 80, rows: 24, ...timers });
    s.control({ type, reason: "idle_timeout" });
    const exit = await s.exit();
    t.equal(exit.reason, "idle_timeout", `${type} ends it`);
  }
});

t.test("a session whose recorder stops sending keepalives is ended as orphaned", async (t) => {
  const id = sid();
  const s = await watch(nc, id);
  await client(agent.nodeId).openTerminal({
    sessionId: id,
    shell: "/bin/sh",
    cols: 80,
    rows: 24,
    ...timers,
    orphanTimeoutMs: 1000,
  });
  const exit = await s.exit();
  t.equal(exit.reason, "orphaned");
});

t.test("the session ends after the detach grace once the last client left", async (t) => {
  const id = sid();
  const s = await watch(nc, id);
  await client(agent.nodeId).openTerminal({
    sessionId: id,
    shell: "/bin/sh",
    cols: 80,
    rows: 24,
    ...timers,
    detachGraceMs: 200,
  });
  s.control({ type: "attach" });
  s.control({ type: "attach" });
  s.control({ type: "detach" });
  await eventually(() => s.w.ctl.filter((m) => m.type === "heartbeat").length >= 5);
  t.notOk(
    s.w.ctl.find((m) => m.type === "exit"),
    "one client still attached: running",
  );
  s.control({ type: "detach" });
  const exit = await s.exit();
  t.equal(exit.reason, "detached");
});

t.test("a session nobody attaches to ends after the attach timeout and the detach grace", async (t) => {
  const id = sid();
  const s = await watch(nc, id);
  await client(agent.nodeId).openTerminal({
    sessionId: id,
    shell: "/bin/sh",
    cols: 80,
    rows: 24,
    ...timers,
    attachTimeoutMs: 300,
    detachGraceMs: 300,
  });
  const exit = await s.exit();
  t.equal(exit.reason, "detached");
  t.ok(s.w.outMessages > 0, "the held output was released (and recorded) before the end");
});

t.test("refusals: disabled terminal, shell outside the allow-list, missing shell, bad session id", async (t) => {
  const refusal = async (p: Promise<unknown>, code: string, reason: string) => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof OrchError, "an OrchError");
    t.equal((err as OrchError).code, code);
    t.equal((err as OrchError).reason, reason);
  };
  await refusal(
    client(off.nodeId).openTerminal({ sessionId: sid(), shell: "", cols: 80, rows: 24, ...timers }),
    "FAILED_PRECONDITION",
    "terminal_disabled",
  );
  await refusal(
    client(agent.nodeId).openTerminal({ sessionId: sid(), shell: "/usr/bin/python3", cols: 80, rows: 24, ...timers }),
    "INVALID_ARGUMENT",
    "shell_not_allowed",
  );
  await refusal(
    client(agent.nodeId).openTerminal({ sessionId: "bad.id", shell: "", cols: 80, rows: 24, ...timers }),
    "INVALID_ARGUMENT",
    "invalid_session_id",
  );
  const missing = await startBridgedAgent(nats, {
    nodeId: "c".repeat(32),
    features: [feature],
    options: { shells: ["/nonexistent/shell"] },
  });
  t.teardown(() => missing.stop());
  await refusal(
    client(missing.nodeId).openTerminal({ sessionId: sid(), shell: "", cols: 80, rows: 24, ...timers }),
    "FAILED_PRECONDITION",
    "shell_not_found",
  );
});

t.test("the default shell is the first of the allow-list", async (t) => {
  const id = sid();
  const s = await watch(nc, id);
  const r = await client(agent.nodeId).openTerminal({ sessionId: id, shell: "", cols: 0, rows: 0, ...timers });
  t.equal(r.shell, "/bin/bash");
  s.control({ type: "attach" });
  s.input("stty size; exit\r");
  await s.exit();
  t.match(s.text(), /24 80/, "0x0 means the default 80x24");
});

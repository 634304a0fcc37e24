import t from "tap";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentTerminalService } from "@orch/contracts";
import { createPool, rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, startNats } from "@orch/kit/testing";
import { createTerminalFeature } from "../../../agent/src/terminal/feature.js";
import { startBridgedAgent } from "./agent-bridge.js";
import { operatorActor, startTerminal, terminalClient } from "./harness.js";

// Recording across replicas and over a session's whole life: who records, hand-over, takeover of
// abandoned sessions, and every way a session ends. Real NATS, Postgres, PTYs; short timers.
const WEB = "a1".repeat(16);
const GONE = "d4".repeat(16);
const nats = await startNats();
const db = await createTestDatabase();
const dir = mkdtempSync(join(tmpdir(), "orch-transcripts-"));
const fast = { lease_seconds: 1, heartbeat_seconds: 0.2, agent_silence_seconds: 3, orphan_timeout_seconds: 2 };
const web = await startBridgedAgent(nats, {
  nodeId: WEB,
  features: [createTerminalFeature()],
  options: { shells: ["/bin/sh"] },
});
const client = await terminalClient(nats);
const obs = await nats.connect("observer");
const pool = createPool({ url: db.url, schema: "terminal", max: 2 });
const bob = { actor: operatorActor("01BOB0000000000000000000AA") };
const started: Array<{ stop(): Promise<void> }> = [];
const replica = async (terminal: Record<string, unknown> = {}) => {
  const r = await startTerminal(nats, db, { dir, terminal: { ...fast, ...terminal } });
  started.push(r);
  return r;
};
t.teardown(async () => {
  await web.stop();
  for (const r of started) await r.stop().catch(() => {});
  await pool.end();
  await db.drop();
  rmSync(dir, { recursive: true, force: true });
  await nats.stop();
});

const row = async (id: string) => (await pool.query("SELECT * FROM sessions WHERE id = $1", [id])).rows[0];
const castOf = (id: string) => readFileSync(join(dir, `${id}.cast`), "utf8");
const events = (cast: string) =>
  cast
    .trimEnd()
    .split("\n")
    .slice(1)
    .map((l) => JSON.parse(l) as [number, string, string]);
const output = (cast: string) =>
  events(cast)
    .filter((e) => e[1] === "o")
    .map((e) => e[2])
    .join("");
const say = (id: string, s: string) => obs.publish(`orch.term.${id}.in`, Buffer.from(s));
const attachCtl = (id: string) => obs.publish(`orch.term.${id}.ctl`, Buffer.from('{"type":"attach"}'));
const ended = (id: string, timeout = 20_000) =>
  eventually(async () => {
    const r = await row(id);
    return r.status === "closed" || r.status === "failed" ? r : undefined;
  }, timeout);

t.test(
  "one replica records each session; a clean stop hands it over and the other resumes the same file",
  async (t) => {
    const a = await replica();
    const b = await replica();
    const { session } = await client.openSession(
      { nodeId: WEB, nodeName: "web-1", cols: 80, rows: 24, shell: "" },
      bob,
    );
    const id = session!.sessionId;
    const owners = [a, b].filter((r) => r.svc.recordings.owned().includes(id));
    t.equal(owners.length, 1, "exactly one replica records it");
    const [owner, other] = owners[0] === a ? [a, b] : [b, a];
    t.equal((await row(id)).owner, owner.svc.recordings.replicaId);

    attachCtl(id);
    say(id, "echo one-$((1+1))\n");
    await eventually(() => output(castOf(id)).includes("one-2"), 5000);
    t.pass("output reaches the file while the session runs (flushed within the interval)");

    await owner.stop();
    started.splice(started.indexOf(owner), 1);
    await eventually(() => other.svc.recordings.owned().includes(id), 10_000);
    t.equal((await row(id)).owner, other.svc.recordings.replicaId, "the other replica took the lease");
    say(id, "echo two-$((2+2))\n");
    await eventually(() => output(castOf(id)).includes("two-4"), 5000);
    say(id, "exit 5\n");
    const done = await ended(id);
    t.equal(done.status, "closed");
    t.equal(done.exit_code, 5);
    t.equal(done.close_reason, "exit");
    const cast = castOf(id);
    t.equal(output(cast).split("one-2").length - 1, 1, "output before the hand-over is recorded once");
    t.ok(
      events(cast).some((e) => e[1] === "m"),
      "the resumption is marked in the transcript",
    );
    t.equal(done.sha256, createHash("sha256").update(cast).digest("hex"), "SHA-256 of the finished file");
    await other.stop();
    started.splice(started.indexOf(other), 1);
  },
);

t.test("idle timeout and max duration close the session and end the PTY", async (t) => {
  for (const [cfg, reason] of [
    [{ idle_timeout_seconds: 1 }, "idle_timeout"],
    [{ max_duration_seconds: 1.5 }, "max_duration"],
  ] as const) {
    const r = await replica(cfg);
    const { session } = await client.openSession(
      { nodeId: WEB, nodeName: "web-1", cols: 80, rows: 24, shell: "" },
      bob,
    );
    const id = session!.sessionId;
    attachCtl(id);
    if (reason === "max_duration") for (let i = 0; i < 4; i++) say(id, "\n"); // activity does not extend it
    const done = await ended(id);
    t.equal(done.status, "closed", reason);
    t.equal(done.close_reason, reason);
    t.type(Number(done.closed_at), "number");
    const agent = rpcClient(obs, "", AgentTerminalService, { timeoutMs: 5000, subjectBase: `orch.agent.${WEB}` });
    await eventually(async () => !(await agent.listTerminals({})).sessionIds.includes(id));
    t.pass(`${reason}: the agent's PTY is gone`);
    await r.stop();
    started.splice(started.indexOf(r), 1);
  }
});

t.test("an agent that goes silent fails the session (agent_lost); its PTY ends itself (orphaned)", async (t) => {
  const r = await replica();
  const lost = "f7".repeat(16);
  const agent = await startBridgedAgent(nats, {
    nodeId: lost,
    features: [createTerminalFeature()],
    options: { shells: ["/bin/sh"] },
  });
  const { session } = await client.openSession(
    { nodeId: lost, nodeName: "lost-1", cols: 80, rows: 24, shell: "" },
    bob,
  );
  const id = session!.sessionId;
  await agent.crash();
  const done = await ended(id);
  t.equal(done.status, "failed");
  t.equal(done.close_reason, "agent_lost");
  await r.stop();
  started.splice(started.indexOf(r), 1);
});

t.test("sessions abandoned by a dead replica are settled at the next start, never left open", async (t) => {
  const insert = async (id: string, node: string, status: string) => {
    await pool.query(
      `INSERT INTO sessions (id, node_id, node_name, operator_id, operator_name, status, shell, cols, rows, opened_at, transcript_file, owner, lease_expires_at)
       VALUES ($1, $2, 'x', 'op', 'op', $3, '/bin/sh', 80, 24, $4, $5, 'dead-replica', $6)`,
      [id, node, status, Date.now() - 60_000, `${id}.cast`, Date.now() - 1000],
    );
  };
  const gone = "01GONE0000000000000000000A";
  await insert(gone, GONE, "open");
  // A crash in the middle of a write: the last line is cut.
  writeFileSync(
    join(dir, `${gone}.cast`),
    '{"version":2,"width":80,"height":24}\n[0.1,"o","before the crash"]\n[0.2,"o","half a li',
  );
  const opening = "01OPEN0000000000000000000A";
  await insert(opening, WEB, "opening");
  const ended_ = "01ENDD0000000000000000000A";
  await insert(ended_, WEB, "open");
  writeFileSync(join(dir, `${ended_}.cast`), '{"version":2,"width":80,"height":24}\n[0.1,"o","bye"]\n');

  const next = await replica({ lease_seconds: 5 });
  const g = await ended(gone);
  t.equal(g.status, "failed");
  t.equal(g.close_reason, "agent_lost", "its agent is not connected");
  const cast = castOf(gone);
  t.equal(
    cast,
    '{"version":2,"width":80,"height":24}\n[0.1,"o","before the crash"]\n',
    "the torn line is cut, everything before it kept",
  );
  t.equal(g.sha256, createHash("sha256").update(cast).digest("hex"));
  const o = await ended(opening);
  t.equal(o.status, "failed");
  t.equal(o.close_reason, "open_interrupted");
  const e = await ended(ended_);
  t.equal(e.status, "failed");
  t.equal(e.close_reason, "recorder_lost", "the agent runs no PTY for it any more");
  await next.stop();
  started.splice(started.indexOf(next), 1);
});

t.test("a UTF-8 character split across output messages is recorded whole", async (t) => {
  const r = await replica();
  const { session } = await client.openSession({ nodeId: WEB, nodeName: "web-1", cols: 80, rows: 24, shell: "" }, bob);
  const id = session!.sessionId;
  const e = Buffer.from("é€");
  obs.publish(`orch.term.${id}.out`, e.subarray(0, 1));
  obs.publish(`orch.term.${id}.out`, e.subarray(1, 3));
  obs.publish(`orch.term.${id}.out`, e.subarray(3));
  attachCtl(id);
  say(id, "exit\n");
  await ended(id);
  const out = output(castOf(id));
  t.match(out, /é€/);
  t.notMatch(out, /\uFFFD/, "no replacement characters");
  await r.stop();
  started.splice(started.indexOf(r), 1);
});

import t from "tap";
import { eventually } from "@orch/kit/testing";
import { startStack } from "./harness.js";

// Every operation ends: an agent that never answers times the operation out, and operations or
// fan-outs a dead replica left behind are ended by the sweeper, at start and periodically.
const s = await startStack(t, { state: { operation_timeout_seconds: 2, sweep_interval_seconds: 1 } });
const r = await s.api("POST", "/modules", {
  name: "noop",
  content: "name: noop\nresources:\n  - { id: x, type: exec, command: 'true' }\n",
});
if (r.status !== 201) throw new Error(r.text);
const silent = await s.addSilentAgent("silent-1");
t.teardown(silent.stop);

const pool = () => s.state.deps.pool;
const insertOp = async (id: string, status: string, deadline: number, runId: string | null = null) =>
  pool().query(
    `INSERT INTO operations (id, node_id, node_name, kind, modules, status, actor_id, actor_name, created_at, started_at, deadline, run_id)
     VALUES ($1, $2, 'silent-1', 'apply', '{noop}', $3, 'op1', 'alice', $4, $5, $6, $7)`,
    [
      id,
      silent.nodeId,
      status,
      Date.now() - 60_000,
      status === "running" ? Date.now() - 50_000 : null,
      deadline,
      runId,
    ],
  );
const statusOf = async (id: string) => (await s.api("GET", `/state/operations/${id}`)).body;

t.test("an agent that never answers: the operation ends timed_out at its deadline", async (t) => {
  const r = await s.api("POST", `/agents/${silent.nodeId}/apply?wait=20`, { modules: ["noop"] });
  t.equal(r.status, 200);
  t.equal(r.body.status, "timed_out");
  t.equal(r.body.error_code, "operation_timed_out");
  const failed = await eventually(async () =>
    (await s.events("state.apply.failed")).find((e) => e.metadata?.operation_id === r.body.id),
  );
  t.equal(failed.metadata?.status, "timed_out");
});

t.test("operations left running by a dead replica are timed out when the service starts", async (t) => {
  await s.state.svc.stop(); // no sweeper while we plant the rows
  await insertOp("01JAAAAAAAAAAAAAAAAAAAAAA1", "running", Date.now() - 1000);
  await insertOp("01JAAAAAAAAAAAAAAAAAAAAAA2", "pending", Date.now() - 1000);
  await s.restartState({ sweep_interval_seconds: 3600 });
  for (const id of ["01JAAAAAAAAAAAAAAAAAAAAAA1", "01JAAAAAAAAAAAAAAAAAAAAAA2"]) {
    const op = await statusOf(id);
    t.equal(op.status, "timed_out", `${id} ended at start`);
    t.equal(op.error_code, "operation_timed_out");
    t.type(op.finished_at, "string");
  }
  const ev = await eventually(async () =>
    (await s.events("state.apply.failed")).find((e) => e.metadata?.operation_id === "01JAAAAAAAAAAAAAAAAAAAAAA1"),
  );
  t.equal(ev.actor?.id, "op1", "the event names the operation's actor");
});

t.test(
  "the periodic sweep ends an operation once its deadline passes; queued operations of a live fan-out wait",
  async (t) => {
    await s.restartState({ sweep_interval_seconds: 1 });
    const now = Date.now();
    await pool().query(
      `INSERT INTO runs (id, assignment, kind, status, selector, modules, batch_size, batches, failures, targets, actor_id, actor_name, created_at, updated_at)
     VALUES ('01JBBBBBBBBBBBBBBBBBBBBBB1', 'a', 'apply', 'running', '*', '{noop}', 1, 2, 0, $1, 'op1', 'alice', $2, $2)`,
      [
        JSON.stringify([
          { node_id: silent.nodeId, name: "silent-1", batch: 1 },
          { node_id: "other", name: "other", batch: 2 },
        ]),
        now,
      ],
    );
    await insertOp("01JAAAAAAAAAAAAAAAAAAAAAA3", "running", now + 1500);
    await insertOp("01JAAAAAAAAAAAAAAAAAAAAAA4", "pending", now - 1000, "01JBBBBBBBBBBBBBBBBBBBBBB1");
    await eventually(async () => (await statusOf("01JAAAAAAAAAAAAAAAAAAAAAA3")).status === "timed_out", 15_000);
    t.pass("swept after its deadline");
    t.equal(
      (await statusOf("01JAAAAAAAAAAAAAAAAAAAAAA4")).status,
      "pending",
      "a queued operation of a fan-out with a fresh heartbeat is left to its replica",
    );

    // The replica stops beating: the run is interrupted and its queued operation ends.
    await pool().query("UPDATE runs SET updated_at = $1 WHERE id = '01JBBBBBBBBBBBBBBBBBBBBBB1'", [now - 120_000]);
    await eventually(async () => (await statusOf("01JAAAAAAAAAAAAAAAAAAAAAA4")).status === "timed_out", 15_000);
    const run = await s.api("GET", "/assignments/a/runs/01JBBBBBBBBBBBBBBBBBBBBBB1");
    t.equal(run.body.status, "interrupted");
    t.same(
      run.body.operations.map((o: any) => [o.name, o.status]),
      [
        ["silent-1", "timed_out"],
        ["other", "not_started"],
      ],
    );
  },
);

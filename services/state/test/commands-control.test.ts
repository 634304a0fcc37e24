import t from "tap";
import { commandRunFinal, type CommandRun } from "@orch/contracts";
import { OrchError, type Actor } from "@orch/kit";
import { eventually } from "@orch/kit/testing";
import { checkStart } from "../src/commands/validate.js";
import { ADMIN, operator, startStack } from "./harness.js";

// Fleet command runs under control: rolling batches with max_failures, cancellation, listing
// and who sees what, input validation, and runs whose replica died.
const s = await startStack(t, { state: { sweep_interval_seconds: 3600, command_concurrency: 3 } });
for (const n of [1, 2, 3, 4, 5]) await s.addAgent({ name: `node-${n}`, tags: { group: "all" } });

const rpc = s.stateRpc;
const start = (req: Parameters<typeof rpc.startCommandRun>[0], actor: Actor = ADMIN) =>
  rpc.startCommandRun({ timeoutSeconds: 60, ...req }, { actor });
const finished = (id: string) =>
  eventually(async () => {
    const r = await rpc.getCommandRun({ id, omitOutput: true }, { actor: ADMIN });
    return commandRunFinal(r.status) ? r : undefined;
  }, 30_000);
const failure = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    return OrchError.from(err);
  }
  throw new Error("expected a refusal");
};

t.test("batch 1 with max_failures 1: stops after the second failure, the rest never start", async (t) => {
  const started = await start({ selector: "group=all", argv: ["false"], batch: "1", maxFailures: 1 });
  t.equal(started.batchSize, 1);
  t.equal(started.batches, 5);
  const run = await finished(started.id);
  t.equal(run.status, "stopped");
  t.same(
    run.targets.map((x) => x.status),
    ["failed", "failed", "not_started", "not_started", "not_started"],
  );
  t.equal(run.counts.not_started, 3);
  t.equal(run.targets[2]!.jobId !== "", true, "a job id was reserved even though it never ran");
  t.equal(run.targets[2]!.startedAt, 0);
});

t.test("batches in percent: every batch runs when nothing fails", async (t) => {
  const started = await start({ selector: "group=all", argv: ["true"], batch: "40%", maxFailures: 0 });
  t.equal(started.batchSize, 2);
  t.equal(started.batches, 3);
  t.same(
    started.targets.map((x) => x.batch),
    [1, 1, 2, 2, 3],
  );
  const run = await finished(started.id);
  t.equal(run.status, "completed");
  t.equal(run.counts.succeeded, 5);
});

t.test("cancel: running processes are signalled, queued targets never start, run.cancelled", async (t) => {
  const started = await start({ selector: "group=all", argv: ["sleep", "60"], batch: "2" });
  await eventually(async () => {
    const r = await rpc.getCommandRun({ id: started.id, omitOutput: true }, { actor: ADMIN });
    return r.counts.running === 2;
  });
  const c = await rpc.cancelCommandRun({ id: started.id }, { actor: ADMIN });
  t.equal(c.status, "cancelling");
  t.equal(c.cancelledBy, "alice");
  t.same(
    c.targets.map((x) => x.status),
    ["running", "running", "not_started", "not_started", "not_started"],
  );
  const run = await finished(started.id);
  t.equal(run.status, "cancelled");
  t.same(
    run.targets.map((x) => x.status),
    ["cancelled", "cancelled", "not_started", "not_started", "not_started"],
  );
  t.equal(run.targets[0]!.signal, "SIGTERM");
  const ev = await eventually(async () =>
    (await s.events("run.cancelled")).find((e) => e.metadata?.run_id === started.id),
  );
  t.equal(ev.actor?.name, "alice");
  const fin = await eventually(async () =>
    (await s.events("run.finished")).find((e) => e.metadata?.run_id === started.id),
  );
  t.equal(fin.metadata?.status, "cancelled");

  const again = await failure(rpc.cancelCommandRun({ id: started.id }, { actor: ADMIN }));
  t.equal(again.code, "FAILED_PRECONDITION");
  t.equal(again.reason, "run_finished");
});

t.test("cancel while targets wait for a concurrency slot: they stay queued and never start", async (t) => {
  const started = await start({ selector: "group=all", argv: ["sleep", "60"] });
  t.equal(started.batches, 1, "one batch: only the limiter (command_concurrency 3) holds the rest back");
  await eventually(async () => {
    const r = await rpc.getCommandRun({ id: started.id, omitOutput: true }, { actor: ADMIN });
    return r.counts.running === 3 ? r : undefined;
  });
  const queued = await rpc.getCommandRun({ id: started.id, omitOutput: true }, { actor: ADMIN });
  t.equal(queued.counts.queued, 2);
  await rpc.cancelCommandRun({ id: started.id }, { actor: ADMIN });
  const run = await finished(started.id);
  t.equal(run.status, "cancelled");
  t.equal(run.counts.cancelled, 3);
  t.equal(run.counts.not_started, 2);
  t.ok(
    run.targets.filter((x) => x.status === "not_started").every((x) => x.startedAt === 0),
    "the waiting ones were never sent",
  );
});

t.test("an operator sees and cancels only its own runs; an admin sees all", async (t) => {
  const bob = operator("op-bob", "bob");
  const carol = operator("op-carol", "carol");
  const mine = await start({ nodeIds: ["node-1"], argv: ["true"] }, bob);
  await finished(mine.id);
  t.equal((await rpc.getCommandRun({ id: mine.id }, { actor: bob })).id, mine.id);
  t.equal((await rpc.getCommandRun({ id: mine.id }, { actor: ADMIN })).id, mine.id);
  const hidden = await failure(rpc.getCommandRun({ id: mine.id }, { actor: carol }));
  t.equal(hidden.reason, "run_not_found");
  const noCancel = await failure(rpc.cancelCommandRun({ id: mine.id }, { actor: carol }));
  t.equal(noCancel.reason, "run_not_found", "not even told that it exists");
  const listed = await rpc.listCommandRuns({ limit: 200 }, { actor: carol });
  t.same(listed.runs, []);
  const bobs = await rpc.listCommandRuns({ limit: 200 }, { actor: bob });
  t.same(
    bobs.runs.map((r) => r.id),
    [mine.id],
  );
});

t.test("list: newest first in pages, a status filter, counts without targets", async (t) => {
  const all = (await rpc.listCommandRuns({ limit: 200 }, { actor: ADMIN })).runs;
  t.ok(all.length >= 4);
  const sorted = [...all]
    .map((r) => r.id)
    .sort()
    .reverse();
  t.same(
    all.map((r) => r.id),
    sorted,
    "newest first",
  );
  t.ok(all.every((r) => r.targets.length === 0 && r.total > 0));
  const seen: string[] = [];
  let cursor = "";
  for (let i = 0; i < 100; i++) {
    const p = await rpc.listCommandRuns({ limit: 2, cursor }, { actor: ADMIN });
    seen.push(...p.runs.map((r) => r.id));
    if (!p.nextCursor) break;
    cursor = p.nextCursor;
  }
  t.same(seen, sorted, "pages of 2 walk the same list");
  const stopped = await rpc.listCommandRuns({ status: "stopped" }, { actor: ADMIN });
  t.equal(stopped.runs.length, 1);
  t.equal(stopped.runs[0]!.counts.not_started, 3);
  const bad = await failure(rpc.listCommandRuns({ status: "nope" }, { actor: ADMIN }));
  t.equal(bad.code, "INVALID_ARGUMENT");
  t.equal(bad.details.field, "status");
});

t.test("a refused start names its field", async (t) => {
  type Req = Parameters<typeof checkStart>[0];
  const ok: Req = {
    selector: "group=all",
    nodeIds: [],
    argv: ["true"],
    script: "",
    env: {},
    timeoutSeconds: 60,
    batch: "",
  };
  const cases: Array<[string, Partial<Req>, string, string]> = [
    ["command and script", { script: "true" }, "invalid_command", "script"],
    ["neither command nor script", { argv: [] }, "invalid_command", "command"],
    ["a script over 64 KiB", { argv: [], script: "x".repeat(64 * 1024 + 1) }, "invalid_command", "script"],
    ["a non-string argument", { argv: ["echo", 3] }, "invalid_command", "command.1"],
    ["timeout 0", { timeoutSeconds: 0 }, "invalid_timeout", "timeout_s"],
    ["timeout over a day", { timeoutSeconds: 86_401 }, "invalid_timeout", "timeout_s"],
    ["a bad env name", { env: { "1BAD": "x" } }, "invalid_command", "env.1BAD"],
    ["selector and node_ids", { nodeIds: ["node-1"] }, "invalid_argument", "node_ids"],
    ["neither selector nor node_ids", { selector: "" }, "invalid_argument", "selector"],
    ["a broken selector", { selector: "role in (" }, "invalid_selector", "selector"],
    ["a bad batch", { batch: "0" }, "invalid_batch", "batch"],
    ["negative max_failures", { maxFailures: -1 }, "invalid_argument", "max_failures"],
  ];
  for (const [what, change, reason, field] of cases) {
    const req = { ...ok, ...change };
    const local = await failure(Promise.resolve().then(() => checkStart(req)));
    t.equal(local.reason, reason, `${what}: ${reason}`);
    t.equal(local.details.field, field, `${what}: field ${field}`);
    if (req.argv.some((a) => typeof a !== "string")) continue; // protobuf cannot carry it
    const remote = await failure(
      rpc.startCommandRun(req as Parameters<typeof rpc.startCommandRun>[0], { actor: ADMIN }),
    );
    t.equal(remote.code, "INVALID_ARGUMENT", `${what} over the bus`);
    t.equal(remote.details.field, field);
  }
});

t.test("a run whose replica died is interrupted by the sweeper: running → lost, queued → not_started", async (t) => {
  const pool = () => s.state.deps.pool;
  const id = "01JAAAAAAAAAAAAAAAAAAAAAC1";
  const old = Date.now() - 120_000;
  await pool().query(
    `INSERT INTO command_runs (id, status, argv, timeout_s, batch_size, batches, actor_id, actor_name, created_at, updated_at)
     VALUES ($1, 'running', '["sleep","60"]', 60, 1, 2, 'admin-1', 'alice', $2, $2)`,
    [id, old],
  );
  await pool().query(
    `INSERT INTO command_targets (run_id, seq, node_id, name, batch, status, job_id, started_at) VALUES
     ($1, 1, 'n1', 'node-1', 1, 'running', '01JAAAAAAAAAAAAAAAAAAAAAJ1', $2),
     ($1, 2, 'n2', 'node-2', 2, 'queued', '01JAAAAAAAAAAAAAAAAAAAAAJ2', NULL)`,
    [id, old],
  );
  await s.restartState({ sweep_interval_seconds: 3600 });
  // The restarted replica's subscription may reach the server a moment after restartState returns.
  const run = await eventually(() => rpc.getCommandRun({ id }, { actor: ADMIN }));
  t.equal(run.status, "interrupted");
  t.ok(run.finishedAt > 0);
  t.same(
    run.targets.map((x) => x.status),
    ["lost", "not_started"],
  );
  const fin = await eventually(async () => (await s.events("run.finished")).find((e) => e.metadata?.run_id === id));
  t.equal(fin.metadata?.status, "interrupted");

  // A live run (fresh heartbeat) is left alone.
  await pool().query(
    `INSERT INTO command_runs (id, status, argv, timeout_s, batch_size, batches, actor_id, actor_name, created_at, updated_at)
     VALUES ('01JAAAAAAAAAAAAAAAAAAAAAC2', 'running', '["true"]', 60, 1, 1, 'admin-1', 'alice', $1, $1)`,
    [Date.now()],
  );
  await s.restartState({ sweep_interval_seconds: 3600 });
  t.equal(
    (await eventually(() => rpc.getCommandRun({ id: "01JAAAAAAAAAAAAAAAAAAAAAC2" }, { actor: ADMIN }))).status,
    "running",
  );
});

t.test("CommandRun shape: the count of every status is present", async (t) => {
  const run: CommandRun = await start({ nodeIds: ["node-2"], argv: ["true"] });
  t.same(Object.keys(run.counts).sort(), [
    "cancelled",
    "failed",
    "lost",
    "not_approved",
    "not_found",
    "not_started",
    "queued",
    "running",
    "succeeded",
    "timed_out",
    "unreachable",
  ]);
  await finished(run.id);
});

import t from "tap";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema } from "@orch/contracts";
import { createTestDatabase, serviceDeps, startNats } from "@orch/kit/testing";
import { stateConfigSchema } from "../src/config.js";
import { operationsDb, type NewOperation, type OperationRow } from "../src/db/operations.js";
import { believedDb, driftDb, snapshotsDb } from "../src/db/snapshots.js";
import type { AgentInfo } from "../src/deps.js";
import { createEndWriter } from "../src/engine/finish-batch.js";
import type { ModuleSource } from "../src/engine/render.js";
import { storeResults } from "../src/engine/results.js";
import { parseModule } from "../src/module/parse.js";
import { STATE_MIGRATIONS } from "./harness.js";

// Operation ends that arrive together are written by one group commit: each operation still gets
// its row, results, snapshot, believed state and exactly one audit event, and a bad row fails alone.
const nats = await startNats();
const db = await createTestDatabase("orch_state_finish_batch");
const deps = await serviceDeps({
  name: "state",
  nats,
  db,
  schema: "state",
  migrations: STATE_MIGRATIONS,
  config: stateConfigSchema.parse({}),
});
// The events stay in the outbox, where the test counts them.
await deps.relay?.stop();
t.teardown(async () => {
  await deps.close();
  await db.drop();
  await nats.stop();
});

const parsed = parseModule(
  [
    "name: web",
    "resources:",
    "  - { id: conf, type: file, path: '/etc/web-{{ attributes.hostname }}.conf', content: x }",
    "  - { id: run, type: exec, command: 'true', creates: /tmp/x }",
    "",
  ].join("\n"),
  "web",
);
const sources: ModuleSource[] = [{ name: "web", sha256: "a".repeat(64), parsed }];
await deps.pool.query("INSERT INTO module_versions (sha256, name, content, created_at) VALUES ($1, 'web', '', 0)", [
  "a".repeat(64),
]);
const agent = (i: number): AgentInfo => ({
  nodeId: `node${i}`,
  name: `agent-${i}`,
  status: "approved",
  connected: true,
  tags: {},
  attributes: { hostname: `h${i}` },
});
const exec = () =>
  storeResults(
    ["conf", "run"].map((id) => ({
      id,
      module: "web",
      type: id === "conf" ? "file" : "exec",
      status: "changed",
      changed: true,
      diff: "+x",
      message: "",
      stdout: "",
      stderr: "",
      durationMs: 1,
      observed: { mode: "0644" },
    })) as never,
    (s) => s,
  );

let seq = 0;
async function newOps(n: number, node = (i: number) => i): Promise<NewOperation[]> {
  const ops = Array.from({ length: n }, (_, i) => ({
    id: `01OP${String(++seq).padStart(6, "0")}`,
    node_id: agent(node(i)).nodeId,
    node_name: agent(node(i)).name,
    kind: "apply" as const,
    modules: ["web"],
    actor_id: "u1",
    actor_name: "alice",
    created_at: Date.now(),
    deadline: Date.now() + 60_000,
    run_id: null,
    assignment: "",
    remediates: null,
    change_request_id: null,
  }));
  await operationsDb.insertMany(deps.pool, ops);
  return ops;
}

/** The state.* and drift.* events in the outbox, by operation id. */
async function eventsByOp(): Promise<Map<string, string[]>> {
  const rows = (await deps.pool.query<{ payload: Buffer }>("SELECT payload FROM outbox ORDER BY id")).rows;
  const out = new Map<string, string[]>();
  for (const r of rows) {
    const ev = fromBinary(AuditEventSchema, r.payload);
    const op = String((ev.metadata as Record<string, unknown>).operation_id ?? "");
    out.set(op, [...(out.get(op) ?? []), ev.eventType]);
  }
  return out;
}

/** Counts the transactions (pool checkouts) made while `fn` runs. */
async function transactions(fn: () => Promise<unknown>): Promise<number> {
  const pool = deps.pool as unknown as { connect: (...a: unknown[]) => unknown };
  const connect = pool.connect;
  let n = 0;
  pool.connect = function (this: unknown, ...a: unknown[]) {
    n++;
    return connect.apply(this, a);
  };
  try {
    await fn();
  } finally {
    pool.connect = connect;
  }
  return n;
}

const writer = createEndWriter(deps);
const succeed = (op: NewOperation, i: number) => {
  const e = exec();
  return writer.end({
    op,
    f: { status: "succeeded", finished_at: Date.now(), summary: e.summary, results: e.results, output: e.output },
    ctx: { agent: agent(i), sources, exec: e },
  });
};

t.test("many operations ending at once: one transaction, and each gets everything it would alone", async (t) => {
  const ops = await newOps(40);
  // node3 had drift in this module: the apply clears it.
  await driftDb.insert(deps.pool, {
    id: "01DRIFT0000",
    node_id: "node3",
    operation_id: "01EARLIER",
    checked_at: 1,
    drifted: true,
    resources: [{ module: "web", id: "conf", type: "file", diff: "", status: "changed", message: "" }],
  });
  let ended: Array<OperationRow | undefined> = [];
  const tx = await transactions(async () => {
    ended = await Promise.all(ops.map((op, i) => succeed(op, i)));
  });
  t.equal(tx, 1, "40 ends in one transaction");
  t.ok(
    ended.every((row, i) => row?.id === ops[i]!.id && row.status === "succeeded"),
    "each caller gets its own ended row",
  );
  const events = await eventsByOp();
  for (const [i, op] of ops.entries()) {
    const row = await operationsDb.get(deps.pool, op.id);
    t.equal(row?.results.length, 2, `results of ${op.id}`);
    t.same(row?.summary, { ok: 0, changed: 2, failed: 0, skipped: 0, unsupported: 0 });
    const snap = await snapshotsDb.ofNode(deps.pool, `node${i}`);
    t.match(snap, [{ module: "web", operation_id: op.id }], `snapshot of node${i}`);
    const believed = await believedDb.ofNode(deps.pool, `node${i}`);
    t.same(
      believed.map((b) => [b.resource_id, b.operation_id]),
      [
        ["conf", op.id],
        ["run", op.id],
      ],
    );
    t.same(
      events.get(op.id),
      i === 3 ? ["state.apply.succeeded", "drift.cleared"] : ["state.apply.succeeded"],
      `exactly the events of ${op.id}`,
    );
  }
  t.match(await driftDb.latest(deps.pool, "node3"), { drifted: false, operation_id: ops[3]!.id });
});

t.test("an operation that already ended is not ended twice; two ends of one node both land", async (t) => {
  const [a, b, c] = await newOps(3, (i) => (i === 2 ? 100 : 100 + i));
  await writer.end({ op: a!, f: { status: "failed", finished_at: Date.now(), error: "first" }, ctx: {} });
  const before = (await eventsByOp()).get(a!.id);
  const [again, second, third] = await Promise.all([succeed(a!, 100), succeed(b!, 101), succeed(c!, 100)]);
  t.equal(again, undefined, "the second end of an ended operation is refused");
  t.match(await operationsDb.get(deps.pool, a!.id), { status: "failed", error: "first" });
  t.same((await eventsByOp()).get(a!.id), before, "no second event");
  t.equal(second?.status, "succeeded");
  t.equal(third?.status, "succeeded", "an operation of a node already in the batch ends in the next one");
  t.match(await snapshotsDb.ofNode(deps.pool, "node100"), [{ operation_id: c!.id }]);
});

t.test("a row the batch cannot write fails alone; the others are written", async (t) => {
  const ops = await newOps(6, (i) => 200 + i);
  const ends = ops.map((op, i) =>
    i === 2
      ? writer.end({ op, f: { status: "bogus" as never, finished_at: Date.now() }, ctx: {} })
      : succeed(op, 200 + i),
  );
  const settled = await Promise.allSettled(ends);
  t.equal(settled[2]!.status, "rejected", "the bad row fails");
  t.ok(
    settled.every((s, i) => i === 2 || (s.status === "fulfilled" && s.value?.status === "succeeded")),
    "every other end is written",
  );
  const events = await eventsByOp();
  for (const [i, op] of ops.entries())
    t.same(events.get(op.id), i === 2 ? undefined : ["state.apply.succeeded"], `events of ${op.id}`);
  t.match(await operationsDb.get(deps.pool, ops[2]!.id), { status: "pending" });
});

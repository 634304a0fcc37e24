import t, { type Test } from "tap";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "@orch/kit/testing";
import { startStack } from "./harness.js";
import { batchSize } from "../src/engine/fanout.js";
import { createLimiter } from "../src/engine/limit.js";

// Assignment fan-out over real providers: selector matching over approved agents, unreachable
// agents, rolling batches that stop on failures, and the progress view.
const s = await startStack(t, { state: { fanout_concurrency: 2 } });
const dir = s.tempDir();
// The tests below match these by name and tags, never by node id.
await s.addAgent({ name: "web-1", tags: { env: "test", role: "web" } });
await s.addAgent({ name: "db-1", tags: { env: "test", role: "db" } });
await s.addAgent({ name: "web-9", tags: { env: "prod", role: "web" } });
await s.addAgent({ name: "cache-1", tags: { env: "test", role: "cache" } });
await s.addAgent({ name: "db-offline", tags: { env: "test", role: "db" }, serve: false });
await s.addAgent({ name: "web-new", tags: { env: "test", role: "web" }, status: "pending" });

const mod = (name: string, resources: string[]) => ({
  name,
  content: [`name: ${name}`, "resources:", ...resources, ""].join("\n"),
});
for (const m of [
  mod("marker", [
    `  - { id: mark, type: file, path: '${dir}/{{ attributes.hostname }}.mark', content: '{{ tags.role }}' }`,
  ]),
  mod("fails", [`  - { id: boom, type: exec, command: 'exit 1' }`]),
]) {
  const r = await s.api("POST", "/modules", m);
  if (r.status !== 201) throw new Error(`upload: ${r.text}`);
}
await s.api("POST", "/assignments", { name: "web-db", selector: "env=test,role in (web,db)", modules: ["marker"] });
await s.api("POST", "/assignments", { name: "everyone-fails", selector: "*", modules: ["fails"] });
await s.api("POST", "/assignments", { name: "everyone-marks", selector: "attr.os=linux", modules: ["marker"] });

/**
 * The finished run an apply started: its answer when it finished while the request waited (200),
 * else (202, still running on a slow machine) the run fetched until it is no longer running.
 */
async function finishedRun(t: Test, assignment: string, r: { status: number; body: any }) {
  t.ok(r.status === 200 || r.status === 202, `the apply was accepted (${r.status})`);
  if (r.status === 200) return r.body;
  return eventually(async () => {
    const v = await s.api("GET", `/assignments/${assignment}/runs/${r.body.run_id}`);
    return v.status === 200 && v.body.status !== "running" ? v.body : undefined;
  }, 60_000);
}

t.test(
  "the selector picks exactly the matching approved agents; a matching offline agent is unreachable",
  async (t) => {
    const r = { body: await finishedRun(t, "web-db", await s.api("POST", "/assignments/web-db/apply?wait=60")) };
    t.equal(r.body.status, "completed");
    t.same(
      r.body.operations.map((o: any) => [o.name, o.status]),
      [
        ["db-1", "succeeded"],
        ["db-offline", "unreachable"],
        ["web-1", "succeeded"],
      ],
    );
    t.ok(existsSync(join(dir, "web-1.mark")) && existsSync(join(dir, "db-1.mark")));
    t.notOk(existsSync(join(dir, "web-9.mark")), "env=prod is not matched");
    t.notOk(existsSync(join(dir, "cache-1.mark")), "role=cache is not matched");
    t.notOk(existsSync(join(dir, "web-new.mark")), "pending agents are never targeted");
    t.equal(r.body.failures, 1);

    const op = await s.api("GET", `/state/operations/${r.body.operations[0].operation_id}`);
    t.equal(op.body.assignment, "web-db");
    t.equal(op.body.run_id, r.body.run_id);
    const view = await s.api("GET", `/assignments/web-db/runs/${r.body.run_id}`);
    t.same(view.body, r.body, "the run can be fetched again");
    t.equal(
      (await s.api("GET", `/assignments/everyone-fails/runs/${r.body.run_id}`)).status,
      404,
      "a run belongs to its assignment",
    );
    t.ok(
      (await s.events("assignment.applied")).some(
        (e) => e.metadata?.run_id === r.body.run_id && e.metadata?.agents === 3,
      ),
    );
  },
);

t.test("a rolling apply with batch 1 and max_failures 0 stops after the first failure", async (t) => {
  const started = await s.api("POST", "/assignments/everyone-fails/apply?wait=60", { batch: 1, max_failures: 0 });
  const r = { body: await finishedRun(t, "everyone-fails", started) };
  t.equal(r.body.status, "stopped");
  t.equal(r.body.batch_size, 1);
  t.equal(r.body.batches, 5);
  t.equal(r.body.failures, 1);
  t.same(
    r.body.operations.map((o: any) => [o.name, o.batch, o.status, o.operation_id === null]),
    [
      ["cache-1", 1, "failed", false],
      ["db-1", 2, "not_started", true],
      ["db-offline", 3, "not_started", true],
      ["web-1", 4, "not_started", true],
      ["web-9", 5, "not_started", true],
    ],
  );
  const ops = await s.api("GET", `/state/operations?limit=500`);
  t.equal(
    ops.body.operations.filter((o: any) => o.run_id === r.body.run_id).length,
    1,
    "only the first batch got an operation",
  );
});

t.test("a rolling plan in 50% batches runs every batch; without wait it answers 202 and progresses", async (t) => {
  const r = await s.api("POST", "/assignments/everyone-marks/plan", { batch: "50%" });
  t.equal(r.status, 202);
  t.equal(r.body.kind, "plan");
  t.equal(r.body.batch_size, 3);
  t.equal(r.body.batches, 2);
  t.ok(
    r.body.operations.filter((o: any) => o.batch === 1).every((o: any) => o.operation_id),
    "the first batch has operations at once",
  );
  let view: Awaited<ReturnType<typeof s.api>> | undefined;
  for (let i = 0; i < 200; i++) {
    view = await s.api("GET", `/assignments/everyone-marks/runs/${r.body.run_id}`);
    if (view.body.status !== "running") break;
    await new Promise((res) => setTimeout(res, 50));
  }
  t.equal(view!.body.status, "completed");
  t.same(view!.body.operations.map((o: any) => o.status).sort(), [
    "succeeded",
    "succeeded",
    "succeeded",
    "succeeded",
    "unreachable",
  ]);
  t.ok((await s.events("state.plan.completed")).filter((e) => e.metadata?.run_id === r.body.run_id).length === 5);
});

t.test("an assignment matching nothing completes at once", async (t) => {
  await s.api("POST", "/assignments", { name: "nobody", selector: "role=mainframe", modules: ["marker"] });
  const r = await s.api("POST", "/assignments/nobody/apply");
  t.equal(r.status, 200);
  t.equal(r.body.status, "completed");
  t.same(r.body.operations, []);
});

t.test("batch sizes and the concurrency limiter (pure logic)", async (t) => {
  t.equal(batchSize("", 7), 7);
  t.equal(batchSize("3", 7), 3);
  t.equal(batchSize("10", 7), 7);
  t.equal(batchSize("25%", 7), 2);
  t.equal(batchSize("1%", 7), 1);
  t.equal(batchSize("100%", 7), 7);
  t.throws(() => batchSize("0", 7), /batch must be a positive integer/);
  t.throws(() => batchSize("150%", 7), /batch must be a positive integer/);
  const limiter = createLimiter(3);
  let now = 0;
  let peak = 0;
  await Promise.all(
    Array.from({ length: 20 }, () =>
      limiter.run(async () => {
        peak = Math.max(peak, ++now);
        await new Promise((r) => setImmediate(r));
        now--;
      }),
    ),
  );
  t.equal(peak, 3, "never more than the limit in flight");
  t.equal(limiter.active, 0);
});

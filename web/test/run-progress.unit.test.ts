import t from "tap";
import { notStartedCount, operationFinished, runCounts, runFinished } from "../src/lib/run-progress.js";

const run = (status: string, ...statuses: string[]) => ({ status, operations: statuses.map((s) => ({ status: s })) });

t.test("counts follow the progress rules", async (t) => {
  const c = runCounts(
    run(
      "running",
      "succeeded",
      "succeeded",
      "failed",
      "timed_out",
      "unreachable",
      "pending",
      "running",
      "queued",
      "queued",
      "not_started",
    ),
  );
  t.same(c, { total: 10, done: 2, failed: 2, unreachable: 1, running: 2, queued: 2, notStarted: 1 });
  t.equal(notStartedCount(c), 3);
});

t.test("an empty run counts nothing", async (t) => {
  t.same(runCounts(run("completed")), {
    total: 0,
    done: 0,
    failed: 0,
    unreachable: 0,
    running: 0,
    queued: 0,
    notStarted: 0,
  });
});

t.test("final run and operation statuses", async (t) => {
  t.equal(runFinished({ status: "running" }), false);
  for (const s of ["completed", "stopped", "interrupted"]) t.equal(runFinished({ status: s }), true, s);
  for (const s of ["succeeded", "failed", "timed_out", "unreachable"]) t.equal(operationFinished(s), true, s);
  for (const s of ["pending", "running", "queued", "not_started"]) t.equal(operationFinished(s), false, s);
});

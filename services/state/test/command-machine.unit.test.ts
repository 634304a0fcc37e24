import t from "tap";
import {
  initialDriveState,
  isOver,
  step,
  type DriveEvent,
  type DriveState,
  type DriveTransition,
  type RunPlan,
} from "../src/commands/machine.js";

// A fleet command run's course (commands/machine.ts), without I/O. The driver that performs the
// effects is exercised end to end by commands-run.test.ts and commands-control.test.ts.

const plan = (over: Partial<RunPlan> = {}): RunPlan => ({ id: "R1", batches: 3, maxFailures: null, ...over });

/** Feeds the events in order, returning every transition. */
function run(s: DriveState, ...events: DriveEvent[]): DriveTransition[] {
  const out: DriveTransition[] = [];
  for (const e of events) {
    const next = step(s, e);
    out.push(next);
    s = next.state;
  }
  return out;
}
const last = (ts: DriveTransition[]) => ts.at(-1)!;

const started = (p = plan()) => last(run(initialDriveState(p), { type: "start" }, { type: "counted", failures: 0 }));
const batchDone = (statuses: Extract<DriveEvent, { type: "batch_ended" }>["statuses"]): DriveEvent[] => [
  { type: "checked", status: "running" },
  { type: "batch_ended", statuses },
  { type: "beat_stored" },
];

t.test("start reads the failures known before launch, then checks batch 1", async (t) => {
  const [s1, s2] = run(initialDriveState(plan()), { type: "start" }, { type: "counted", failures: 2 });
  t.same(s1!.state.phase, "counting");
  t.same(s1!.effects, [{ type: "count_failures" }]);
  t.match(s2!.state, { phase: "checking", batch: 1, failures: 2 });
  t.same(s2!.effects, [{ type: "read_run" }]);
});

t.test("each batch: checked, run, heartbeat; after the last one the run completes", async (t) => {
  const ts = run(
    started(plan({ batches: 2 })).state,
    { type: "checked", status: "running" },
    { type: "batch_ended", statuses: ["succeeded", "failed"] },
    { type: "beat_stored" },
    { type: "checked", status: "running" },
    { type: "batch_ended", statuses: ["succeeded"] },
    { type: "beat_stored" },
  );
  t.same(
    ts.map((x) => x.effects),
    [
      [{ type: "run_batch", batch: 1 }],
      [{ type: "store_beat" }],
      [{ type: "read_run" }],
      [{ type: "run_batch", batch: 2 }],
      [{ type: "store_beat" }],
      [{ type: "finish", status: "completed" }],
    ],
  );
  t.match(last(ts).state, { phase: "ending", status: "completed", failures: 1 });
  t.match(step(last(ts).state, { type: "finished" }).state, { phase: "ended" });
});

t.test("a run that is no longer running when re-read launches nothing more", async (t) => {
  for (const status of ["cancelling", "cancelled", undefined] as const) {
    const n = step(started().state, { type: "checked", status });
    t.same(n.effects, [{ type: "finish", status: "completed" }], String(status));
  }
});

t.test("max_failures: more failures than allowed stop the run before the next batch", async (t) => {
  const s = started(plan({ maxFailures: 1 })).state;
  const ts = run(s, ...batchDone(["failed", "timed_out", "succeeded"]));
  t.match(last(ts).state, { phase: "ending", status: "stopped", failures: 2 });
  t.same(last(ts).effects, [
    {
      type: "log",
      level: "info",
      fields: { run: "R1", failures: 2, max_failures: 1, batch: 1 },
      message: "command run stopped: too many failures",
    },
    { type: "finish", status: "stopped" },
  ]);
  // As many failures as allowed go on.
  t.same(last(run(s, ...batchDone(["failed", "succeeded"]))).effects, [{ type: "read_run" }]);
});

t.test("failures counted before launch count against max_failures", async (t) => {
  const s = last(
    run(initialDriveState(plan({ maxFailures: 1 })), { type: "start" }, { type: "counted", failures: 1 }),
  ).state;
  t.match(last(run(s, ...batchDone(["lost"]))).state, { status: "stopped", failures: 2 });
});

t.test("too many failures in the last batch: the run completes (nothing was left to stop)", async (t) => {
  const s = started(plan({ batches: 1, maxFailures: 0 })).state;
  t.match(last(run(s, ...batchDone(["failed"]))).state, { phase: "ending", status: "completed" });
});

t.test("cancel: the agents are told once, and no further batch is checked or launched", async (t) => {
  const s = step(started().state, { type: "checked", status: "running" }).state;
  const c = step(s, { type: "cancel" });
  t.same(c.effects, [{ type: "cancel_sent" }]);
  t.equal(c.state.cancelled, true);
  t.same(step(c.state, { type: "cancel" }).effects, [], "a second cancel does nothing");
  const after = run(c.state, { type: "batch_ended", statuses: ["cancelled", "not_started"] }, { type: "beat_stored" });
  t.same(last(after).effects, [{ type: "finish", status: "completed" }]);
});

t.test("a cancel before the first batch ends the run without reading it", async (t) => {
  const ts = run(initialDriveState(plan()), { type: "start" }, { type: "cancel" }, { type: "counted", failures: 0 });
  t.same(last(ts).effects, [{ type: "finish", status: "completed" }]);
});

t.test("a failed I/O step interrupts the run, once", async (t) => {
  const error = new Error("db gone");
  const s = step(started().state, { type: "checked", status: "running" }).state;
  const f = step(s, { type: "failed", error });
  t.match(f.state, { phase: "ending", status: "interrupted" });
  t.same(f.effects, [
    { type: "log", level: "error", fields: { err: error, run: "R1" }, message: "command run failed" },
    { type: "finish", status: "interrupted" },
  ]);
  t.ok(isOver(f.state));
  t.same(step(f.state, { type: "failed", error }).effects, [], "a late failure changes nothing");
  t.same(step(f.state, { type: "cancel" }).effects, [], "nor does a late cancel");
  t.same(step(f.state, { type: "batch_ended", statuses: ["failed"] }).effects, [], "nor a late result");
});

t.test("events that do not belong to the phase are ignored", async (t) => {
  const s = started().state;
  for (const e of [
    { type: "start" },
    { type: "counted", failures: 3 },
    { type: "batch_ended", statuses: [] },
    { type: "beat_stored" },
    { type: "finished" },
  ] as DriveEvent[])
    t.equal(step(s, e).state, s, e.type);
  t.equal(step(initialDriveState(plan()), { type: "checked", status: "running" }).effects.length, 0);
});

t.test("a run of no batches completes once counted", async (t) => {
  t.same(started(plan({ batches: 0 })).effects, [{ type: "finish", status: "completed" }]);
});

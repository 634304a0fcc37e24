import t from "tap";
import { fromBinary } from "@bufbuild/protobuf";
import { RUN_PROGRESS_SUBJECTS, RunProgressSchema, StateService, type RunProgress } from "@orch/contracts";
import { OrchError, rpcClient } from "@orch/kit";
import { eventually } from "@orch/kit/testing";
import { startStack } from "./harness.js";

// What the console's live run view and assignment editor stand on: RunProgress on the bus after
// every change of a fan-out, ListOperations by run with results, and UpdateAssignment.
const s = await startStack(t, { state: { operation_timeout_seconds: 3 } });
const dir = s.tempDir();
await s.addAgent({ name: "live-1", tags: { role: "web" } });
await s.addAgent({ name: "live-2", tags: { role: "db" } });
const silent = await s.addSilentAgent("silent-1");
t.teardown(() => silent.stop());

const mod = (name: string) => ({
  name,
  content: `name: ${name}\nresources:\n  - { id: mark, type: file, path: '${dir}/{{ attributes.hostname }}.${name}', content: '${name}' }\n`,
});
for (const name of ["mark-a", "mark-b"]) {
  const r = await s.api("POST", "/modules", mod(name));
  if (r.status !== 201) throw new Error(`upload: ${r.text}`);
}

const actor = { id: "admin", name: "admin", type: "operator", role: "admin" };
const infra = await s.nats.connect("runs-live-test");
t.teardown(() => infra.close());
const state = rpcClient(infra, "state", StateService, { timeoutMs: 5000 });
/** The reason an RPC was refused with ("" when it succeeded). */
const reasonOf = (p: Promise<unknown>) =>
  p.then(
    () => "",
    (e: unknown) => OrchError.from(e).reason,
  );

t.test("UpdateAssignment replaces selector, modules and description with an assignment.updated event", async (t) => {
  const created = await s.api("POST", "/assignments", { name: "edit-me", selector: "role=web", modules: ["mark-a"] });
  t.equal(created.status, 201);
  const r = await s.api("PUT", "/assignments/edit-me", {
    selector: " role=db ",
    modules: ["mark-b", "mark-a", "mark-b"],
    description: "db markers",
  });
  t.equal(r.status, 200, r.text);
  t.same(r.body, {
    ...created.body,
    selector: "role=db",
    modules: ["mark-b", "mark-a"],
    description: "db markers",
  });
  t.same((await s.api("GET", "/assignments/edit-me")).body, r.body, "stored");
  const events = (await s.events("assignment.updated")).filter((e) => e.target?.id === "edit-me");
  t.equal(events.length, 1);
  t.match(events[0]!.metadata, {
    selector: "role=db",
    modules: ["mark-b", "mark-a"],
    previous: { selector: "role=web", modules: ["mark-a"], description: null },
  });

  const applied = await s.api("POST", "/assignments/edit-me/apply?wait=30");
  t.same(
    applied.body.operations.map((o: any) => [o.name, o.status]),
    [["live-2", "succeeded"]],
    "the next apply uses the new selector",
  );

  const cleared = await s.api("PUT", "/assignments/edit-me", { selector: "role=db", modules: ["mark-b"] });
  t.equal(cleared.body.description, null, "an omitted description clears it");
});

t.test("an invalid update changes nothing and records nothing", async (t) => {
  const before = (await s.api("GET", "/assignments/edit-me")).body;
  const eventsBefore = (await s.events("assignment.updated")).length;
  const bad = await s.api("PUT", "/assignments/edit-me", { selector: "role in (web", modules: ["mark-a"] });
  t.equal(bad.status, 400);
  t.equal(bad.body.code, "invalid_selector");
  const missing = await s.api("PUT", "/assignments/edit-me", { selector: "*", modules: ["mark-a", "nope"] });
  t.equal(missing.status, 404);
  t.equal(missing.body.code, "module_not_found");
  t.equal(missing.body.module, "nope");
  const gone = await s.api("PUT", "/assignments/no-such", { selector: "*", modules: ["mark-a"] });
  t.equal(gone.status, 404);
  t.equal(gone.body.code, "assignment_not_found");
  t.same((await s.api("GET", "/assignments/edit-me")).body, before, "unchanged");
  t.equal((await s.events("assignment.updated")).length, eventsBefore, "no event");
  t.equal(
    await reasonOf(state.updateAssignment({ name: "edit-me", selector: "*", modules: [] }, { actor })),
    "invalid_request",
    "a module list is required",
  );
});

t.test("each change of a fan-out publishes the run's counts; the last one is the final state", async (t) => {
  const seen: RunProgress[] = [];
  const sub = infra.subscribe(RUN_PROGRESS_SUBJECTS, {
    callback: (_e, m) => void seen.push(fromBinary(RunProgressSchema, m.data)),
  });
  t.teardown(() => sub.unsubscribe());
  await infra.flush();
  await s.api("POST", "/assignments", {
    name: "half-silent",
    selector: "name in (live-1,silent-1)",
    modules: ["mark-a"],
  });
  const started = await s.api("POST", "/assignments/half-silent/apply");
  t.equal(started.status, 202);
  const runId = started.body.run_id;
  const mine = () => seen.filter((p) => p.runId === runId);

  // live-1 ends at once; silent-1 hangs until its 3 s deadline.
  const midway = await eventually(() => mine().find((p) => p.done === 1 && p.running === 1), 15_000);
  t.match(midway, { assignment: "half-silent", kind: "apply", status: "running", total: 2, failed: 0 });
  const last = await eventually(() => mine().find((p) => p.status === "completed"), 20_000);
  t.match(last, { total: 2, done: 1, failed: 1, unreachable: 0, running: 0, queued: 0, notStarted: 0 });
  t.ok(last.at >= midway.at);
  for (const p of mine())
    t.equal(p.done + p.failed + p.unreachable + p.running + p.queued + p.notStarted, p.total, "counts add up");
  const dones = mine().map((p) => p.done);
  t.same(dones, [...dones].sort(), "done never goes back");
  const view = await s.api("GET", `/assignments/half-silent/runs/${runId}`);
  t.same(
    view.body.operations.map((o: any) => [o.name, o.status]),
    [
      ["live-1", "succeeded"],
      ["silent-1", "timed_out"],
    ],
    "the run agrees with the last message",
  );
});

t.test("a stopped rolling run reports queued agents while running and not_started at the end", async (t) => {
  const seen: RunProgress[] = [];
  const sub = infra.subscribe(RUN_PROGRESS_SUBJECTS, {
    callback: (_e, m) => void seen.push(fromBinary(RunProgressSchema, m.data)),
  });
  t.teardown(() => sub.unsubscribe());
  await infra.flush();
  const first = await s.addSilentAgent("a-silent");
  t.teardown(() => first.stop());
  await s.api("POST", "/assignments", {
    name: "silent-first",
    selector: "name in (a-silent,live-1)",
    modules: ["mark-a"],
  });
  // Batches follow agent names: a-silent alone first (it times out), so live-1 waits and then never starts.
  const r = await s.api("POST", "/assignments/silent-first/apply", { batch: 1, max_failures: 0 });
  const runId = r.body.run_id;
  const mine = () => seen.filter((p) => p.runId === runId);
  const waiting = await eventually(() => mine().find((p) => p.running === 1), 15_000);
  t.match(waiting, { status: "running", total: 2, queued: 1, notStarted: 0 });
  const last = await eventually(() => mine().find((p) => p.status !== "running"), 20_000);
  t.match(last, { status: "stopped", total: 2, done: 0, failed: 1, running: 0, queued: 0, notStarted: 1 });
});

t.test("ListOperations filters by run and includes results on request", async (t) => {
  const a = await s.api("POST", "/assignments/edit-me/apply?wait=30");
  const b = await s.api("POST", "/assignments", { name: "both", selector: "role", modules: ["mark-a"] });
  t.equal(b.status, 201);
  const both = await s.api("POST", "/assignments/both/apply?wait=30");
  t.equal(both.body.operations.length, 2);

  const page = await state.listOperations({ runId: both.body.run_id, withResults: true }, { actor });
  t.same(page.operations.map((o) => o.nodeName).sort(), ["live-1", "live-2"], "only that run's operations");
  t.ok(
    page.operations.every((o) => o.runId === both.body.run_id && o.results.length === 1),
    "with their results",
  );
  t.match(page.operations[0]!.results[0], { id: "mark", module: "mark-a", type: "file" });
  const lean = await state.listOperations({ runId: both.body.run_id }, { actor });
  t.ok(
    lean.operations.every((o) => o.results.length === 0),
    "without with_results the page stays light",
  );
  const lower = await state.listOperations({ runId: a.body.run_id.toLowerCase(), withResults: true }, { actor });
  t.equal(lower.operations.length, 1, "a run id is case-insensitive like every ULID");

  const first = await state.listOperations({ runId: both.body.run_id, withResults: true, limit: 1 }, { actor });
  t.equal(first.operations.length, 1);
  t.not(first.nextCursor, "");
  const second = await state.listOperations(
    { runId: both.body.run_id, withResults: true, limit: 1, cursor: first.nextCursor },
    { actor },
  );
  t.equal(second.operations.length, 1);
  t.equal(second.nextCursor, "");
  t.not(second.operations[0]!.id, first.operations[0]!.id);

  t.equal(
    await reasonOf(state.listOperations({ runId: both.body.run_id, withResults: true, limit: 101 }, { actor })),
    "invalid_limit",
  );
  t.equal(await reasonOf(state.listOperations({ runId: "not-a-run" }, { actor })), "invalid_request");
  t.equal(
    (await state.listOperations({ runId: both.body.run_id, limit: 500 }, { actor })).operations.length,
    2,
    "without results the usual limit holds",
  );
});

t.test("ListAssignmentRuns pages one assignment's runs newest first, even after it is deleted", async (t) => {
  t.equal(
    (await s.api("POST", "/assignments", { name: "listed", selector: "role=web", modules: ["mark-a"] })).status,
    201,
  );
  const plan = await s.api("POST", "/assignments/listed/plan?wait=30");
  const apply = await s.api("POST", "/assignments/listed/apply?wait=30");
  t.equal(apply.body.status, "completed", apply.text);
  await s.api("POST", "/assignments/edit-me/plan?wait=30");

  const all = await state.listAssignmentRuns({ name: "listed" }, { actor });
  t.same(
    all.runs.map((r) => [r.id, r.kind, r.status]),
    [
      [apply.body.run_id, "apply", "completed"],
      [plan.body.run_id, "plan", "completed"],
    ],
    "only this assignment's runs, newest first",
  );
  t.equal(all.nextCursor, "");
  t.match(all.runs[0], {
    assignment: "listed",
    selector: "role=web",
    modules: ["mark-a"],
    actorId: apply.body.started_by,
    failures: 0,
  });
  t.ok(all.runs[0]!.finishedAt >= all.runs[0]!.createdAt && all.runs[0]!.createdAt > 0);
  t.same(all.runs[0]!.targets, [], "targets are left to GetAssignmentRun");

  const first = await state.listAssignmentRuns({ name: "listed", limit: 1 }, { actor });
  t.same(
    first.runs.map((r) => r.id),
    [apply.body.run_id],
  );
  t.equal(first.nextCursor, apply.body.run_id);
  const second = await state.listAssignmentRuns(
    { name: "listed", limit: 1, cursor: first.nextCursor.toLowerCase() },
    { actor },
  );
  t.same(
    second.runs.map((r) => r.id),
    [plan.body.run_id],
    "a cursor is case-insensitive like every ULID",
  );
  t.equal(second.nextCursor, "");

  t.equal(await reasonOf(state.listAssignmentRuns({ name: "listed", cursor: "listed" }, { actor })), "invalid_cursor");
  t.equal(await reasonOf(state.listAssignmentRuns({ name: "listed", limit: 201 }, { actor })), "invalid_limit");
  t.equal((await state.listAssignmentRuns({ name: "listed", limit: 200 }, { actor })).runs.length, 2);
  t.same((await state.listAssignmentRuns({ name: "never-was" }, { actor })).runs, []);

  t.equal((await s.api("DELETE", "/assignments/listed")).status, 204);
  t.equal(
    (await state.listAssignmentRuns({ name: "listed" }, { actor })).runs.length,
    2,
    "a deleted assignment's runs stay listed",
  );
});

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { RunCommandResponseSchema } from "@orch/contracts";
import { OrchError } from "@orch/kit";
import t from "tap";
import { planCommandRun, runStartedEvent } from "../src/commands/plan.js";
import { answeredEnd, cancelledEnd, failedEnd, outcome } from "../src/commands/target-end.js";
import type { Resolved } from "../src/commands/targets.js";
import type { CommandSpec } from "../src/commands/validate.js";

// The pure parts of a command run: what a start records (commands/plan.ts) and how a target's end
// is stored (commands/target-end.ts). The run itself is driven end to end by commands-run.test.ts.

const spec = (over: Partial<CommandSpec> = {}): CommandSpec => ({
  selector: "role=web",
  nodeIds: null,
  argv: ["uptime"],
  script: null,
  env: { B: "2", A: "1" },
  timeoutS: 60,
  batch: "2",
  maxFailures: 1,
  ...over,
});
const agent = (n: number): Resolved => ({
  kind: "agent",
  agent: { nodeId: `n${n}`, name: `web-${n}`, status: "approved", connected: true, tags: {}, attributes: {} },
});
const actor = { id: "U1", name: "ada", type: "operator" as const, role: "admin" };

function plan(resolved: Resolved[], s = spec()) {
  let job = 0;
  return planCommandRun({ id: "R1", nextId: () => `J${++job}`, spec: s, resolved, window: null, actor, now: 1000 });
}

t.test("launchable targets in batches with job ids, then the names that never run in batch 0", async (t) => {
  const skip: Resolved = { kind: "skip", nodeId: "", name: "ghost", status: "not_found" };
  const p = plan([agent(1), skip, agent(2), agent(3)]);
  t.same(
    p.targets.map((x) => [x.seq, x.name, x.batch, x.status, x.job_id]),
    [
      [1, "web-1", 1, "queued", "J1"],
      [2, "web-2", 1, "queued", "J2"],
      [3, "web-3", 2, "queued", "J3"],
      [4, "ghost", 0, "not_found", null],
    ],
  );
  t.match(p.run, { id: "R1", status: "running", batch_size: 2, batches: 2, env_keys: ["A", "B"], max_failures: 1 });
  t.equal(p.live, true);
});

t.test("nothing launchable: the run is not live and has no batches", async (t) => {
  const p = plan([{ kind: "skip", nodeId: "n9", name: "db-9", status: "not_approved" }]);
  t.equal(p.live, false);
  t.match(p.run, { batch_size: 0, batches: 0 });
});

t.test("run.started names a script by digest, never by its body", async (t) => {
  const s = spec({ argv: null, script: "echo secret-ish" });
  const ev = runStartedEvent(plan([agent(1)], s), s, actor);
  t.equal(ev.summary, "command run R1 started on 1 agent by ada");
  t.match(ev.metadata, { script_bytes: 15, selector: "role=web", targets: 1 });
  t.notOk(JSON.stringify(ev).includes("secret-ish"));
  const argv = runStartedEvent(plan([agent(1)]), spec(), actor);
  t.same(argv.metadata?.command, ["uptime"]);
});

const response = (over: MessageInitShape<typeof RunCommandResponseSchema> = {}) =>
  create(RunCommandResponseSchema, { exitCode: 0, durationMs: 5, ...over });

t.test("an answer: status from how the process ended, output cut at the cap", async (t) => {
  t.same(outcome(response()), { status: "succeeded", error: "" });
  t.same(outcome(response({ exitCode: 2 })), { status: "failed", error: "" });
  t.same(outcome(response({ timedOut: true })), { status: "timed_out", error: "" });
  t.same(outcome(response({ cancelled: true, timedOut: true })), { status: "cancelled", error: "" });
  t.same(outcome(response({ spawnError: "ENOENT" })), { status: "failed", error: "ENOENT" });
  const end = answeredEnd(response({ exitCode: -1, signal: "SIGKILL", stdout: new Uint8Array(10) }), 4, 77);
  t.match(end, {
    exit_code: null,
    signal: "SIGKILL",
    finished_at: 77,
    stdout_truncated: true,
    stderr_truncated: false,
  });
  t.equal(end.stdout.byteLength, 4);
});

t.test("a RunCommand that threw: lost, unreachable or failed", async (t) => {
  const err = (code: string, reason: string) => new OrchError(code as never, reason as never, "boom");
  t.match(failedEnd(err("UNAVAILABLE", "agent_disconnected"), "web-1", 5), {
    status: "lost",
    error: "agent web-1 disconnected while running",
    finished_at: 5,
  });
  t.match(failedEnd(err("FAILED_PRECONDITION", "agent_not_connected"), "web-1", 5), { status: "unreachable" });
  t.match(failedEnd(err("DEADLINE_EXCEEDED", "timeout"), "web-1", 5), {
    status: "lost",
    error: "agent web-1 did not answer in time",
  });
  t.match(failedEnd(err("INTERNAL", "internal"), "web-1", 5), { status: "failed", error: "boom" });
  t.match(cancelledEnd(9), { status: "cancelled", error: "cancelled before it started", finished_at: 9 });
});

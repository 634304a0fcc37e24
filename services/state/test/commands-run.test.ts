import t from "tap";
import { fromBinary } from "@bufbuild/protobuf";
import { commandRunFinal, commandRunSubject, CommandRunEventSchema, type CommandRun } from "@orch/contracts";
import { eventually } from "@orch/kit/testing";
import { ADMIN, startStack } from "./harness.js";

// Fleet command runs on real agent command handlers (agent/src/commands) over real NATS and
// Postgres: target resolution, outcomes, captured bytes, the relayed output and the events.
const s = await startStack(t, { state: { command_output_cap_bytes: 1024 } });
const web1 = await s.addAgent({ name: "web-1", tags: { role: "web" } });
const web2 = await s.addAgent({ name: "web-2", tags: { role: "web" } });
await s.addAgent({ name: "db-1", tags: { role: "db" } });
const pending = await s.addAgent({ name: "new-1", status: "pending" });
const offline = await s.addAgent({ name: "web-off", tags: { role: "offline" }, serve: false });

const rpc = s.stateRpc;
const start = (req: Parameters<typeof rpc.startCommandRun>[0]) =>
  rpc.startCommandRun({ timeoutSeconds: 30, ...req }, { actor: ADMIN });
const finished = (id: string, omitOutput = false) =>
  eventually(async () => {
    const r = await rpc.getCommandRun({ id, omitOutput }, { actor: ADMIN });
    return commandRunFinal(r.status) ? r : undefined;
  }, 30_000);
const byName = (run: CommandRun) => Object.fromEntries(run.targets.map((x) => [x.name, x]));
const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");

t.test("a selector run on the matching agents: counts, exit codes, output, events without env values", async (t) => {
  const started = await start({
    selector: "role=web",
    argv: ["sh", "-c", 'echo "out ${#TOKEN}"; echo err >&2; [ "$TOKEN" = "$(printf s3c; printf r3t)" ]'],
    env: { TOKEN: "s3cr3t" },
  });
  t.equal(started.status, "running");
  t.same(
    started.targets.map((x) => [x.name, x.status, x.batch]),
    [
      ["web-1", "queued", 1],
      ["web-2", "queued", 1],
    ],
    "role=web matches the two approved web agents, by name",
  );
  t.same(started.envKeys, ["TOKEN"]);

  const run = await finished(started.id);
  t.equal(run.status, "completed");
  t.equal(run.total, 2);
  t.equal(run.counts.succeeded, 2);
  t.equal(run.counts.failed, 0);
  t.equal(run.finishedAt > 0, true);
  for (const x of run.targets) {
    t.equal(x.exitCode, 0, `${x.name} exit code`);
    t.equal(text(x.stdout), "out 6\n", "the env value reached the process");
    t.equal(text(x.stderr), "err\n");
    t.ok(x.jobId, "job id recorded");
    t.ok(x.startedAt > 0 && x.finishedAt >= x.startedAt);
  }
  t.same(
    run.targets.map((x) => x.nodeId),
    [web1, web2],
  );

  const [ev] = (await s.events("run.started")).filter((e) => e.metadata?.run_id === started.id);
  t.same(ev?.metadata?.command, ["sh", "-c", started.argv[2]]);
  t.equal(ev?.metadata?.selector, "role=web");
  t.equal(ev?.metadata?.targets, 2);
  t.same(ev?.metadata?.env_keys, ["TOKEN"]);
  const fin = await eventually(async () =>
    (await s.events("run.finished")).find((e) => e.metadata?.run_id === started.id),
  );
  t.equal((fin.metadata?.counts as Record<string, number> | undefined)?.succeeded, 2);
  t.equal(fin.metadata?.total, 2);
  t.equal(fin.metadata?.status, "completed");

  const all = JSON.stringify([...(await s.events("run.started")), ...(await s.events("run.finished"))]);
  t.notMatch(all, /s3cr3t/, "no env value in any event");
  t.notMatch(await s.dumpStateSchema(), /s3cr3t/, "no env value in any row");
});

t.test("a script run: failing exit codes are failed, and a script is recorded by digest", async (t) => {
  const started = await start({ nodeIds: ["web-1", "db-1"], script: "#!/bin/sh\necho hi\nexit 3\n" });
  const run = await finished(started.id);
  t.equal(run.counts.failed, 2);
  for (const x of run.targets) {
    t.equal(x.status, "failed", `${x.name}: ${x.error}`);
    t.equal(x.exitCode, 3, `${x.name}: ${x.error}`);
    t.equal(text(x.stdout), "hi\n");
  }
  const ev = (await s.events("run.started")).find((e) => e.metadata?.run_id === started.id);
  t.equal(ev?.metadata?.script_bytes, 25);
  t.match(ev?.metadata?.script_sha256, /^[0-9a-f]{64}$/);
  t.notOk(ev?.metadata?.script, "the body is not in the event");
  t.same(ev?.metadata?.node_ids, ["web-1", "db-1"]);
});

t.test("node_ids: a pending agent is not_approved and an unknown name not_found; neither launches", async (t) => {
  const started = await start({ nodeIds: [web1, pending, "nobody"], argv: ["true"] });
  t.same(
    started.targets.map((x) => [x.name, x.status, x.batch]),
    [
      ["web-1", "queued", 1],
      [pending, "not_approved", 0],
      ["nobody", "not_found", 0],
    ],
  );
  const run = await finished(started.id);
  t.same(
    run.targets.map((x) => x.status),
    ["succeeded", "not_approved", "not_found"],
  );
  t.equal(run.targets[1]!.nodeId, pending);
  t.equal(run.targets[2]!.jobId, "", "never launched");
});

t.test("nothing matched: the run is completed at once with no targets", async (t) => {
  const run = await start({ selector: "role=nothing", argv: ["true"] });
  t.equal(run.status, "completed");
  t.equal(run.total, 0);
  t.same(run.targets, []);
  t.ok(run.finishedAt > 0);
  const fin = await eventually(async () => (await s.events("run.finished")).find((e) => e.metadata?.run_id === run.id));
  t.equal(fin.metadata?.total, 0);
});

t.test("an agent that is not connected is unreachable, not a hang", async (t) => {
  const started = await start({ nodeIds: [offline], argv: ["true"], timeoutSeconds: 3600 });
  const run = await finished(started.id);
  t.equal(run.targets[0]!.status, "unreachable");
  t.match(run.targets[0]!.error, /not connected/);
  t.equal(run.counts.unreachable, 1);
});

t.test("output chunks and status changes are republished on the run's subject, in order", async (t) => {
  const seen: Array<{ case: string; value: unknown }> = [];
  let runId = "";
  const early: Uint8Array[] = [];
  const sub = s.infra.subscribe(commandRunSubject("*"), {
    callback: (_e, m) => {
      if (!runId) early.push(m.data);
      else if (m.subject === commandRunSubject(runId))
        seen.push(fromBinary(CommandRunEventSchema, m.data).event as never);
    },
  });
  t.teardown(() => sub.unsubscribe());
  await s.infra.flush();
  // Lines spaced out so the agent flushes them as separate chunks.
  const started = await start({
    nodeIds: ["web-2"],
    argv: ["sh", "-c", "for i in 1 2 3 4 5; do echo line-$i; sleep 0.1; done"],
  });
  runId = started.id;
  for (const d of early) {
    const ev = fromBinary(CommandRunEventSchema, d);
    if (ev.runId === runId) seen.unshift(ev.event as never);
  }
  await finished(runId);
  await eventually(() => seen.some((e) => e.case === "run" && commandRunFinal((e.value as CommandRun).status)));
  const outputs = seen
    .filter((e) => e.case === "output")
    .map((e) => e.value as { seq: number; data: Uint8Array; name: string; stream: string });
  t.ok(outputs.length >= 2, "several chunks");
  t.same(
    outputs.map((o) => o.seq),
    outputs.map((_, i) => i + 1),
    "seq 1, 2, 3, ... as published",
  );
  t.equal(outputs.map((o) => text(o.data)).join(""), "line-1\nline-2\nline-3\nline-4\nline-5\n");
  t.ok(outputs.every((o) => o.name === "web-2" && o.stream === "stdout"));
  const targets = seen.filter((e) => e.case === "target").map((e) => e.value as { status: string; stdout: Uint8Array });
  t.same(
    targets.map((x) => x.status),
    ["running", "succeeded"],
  );
  t.equal(targets[1]!.stdout.length, 0, "target events carry no output");
  const last = seen.at(-1)!;
  t.equal(last.case, "run");
  t.equal((last.value as CommandRun).status, "completed");
  t.same((last.value as CommandRun).targets, [], "run events carry no targets");
});

t.test("output beyond the cap is cut and flagged; non-UTF-8 bytes are stored exactly", async (t) => {
  const started = await start({
    nodeIds: ["web-1"],
    argv: ["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' a; printf '\\377\\376\\000x' >&2"],
  });
  const run = await finished(started.id);
  const x = run.targets[0]!;
  t.equal(x.status, "succeeded");
  t.equal(x.stdout.length, 1024, "capped at state.command_output_cap_bytes");
  t.equal(x.stdoutTruncated, true);
  t.same(Buffer.from(x.stderr), Buffer.from([0xff, 0xfe, 0x00, 0x78]));
  t.equal(x.stderrTruncated, false);
  const lean = await rpc.getCommandRun({ id: started.id, omitOutput: true }, { actor: ADMIN });
  t.equal(lean.targets[0]!.stdout.length, 0, "omit_output leaves the bytes out");
  t.equal(lean.targets[0]!.stdoutTruncated, true);
});

t.test("a maintenance window does not block a run; its name is recorded", async (t) => {
  s.maintenance.status.active = true;
  s.maintenance.status.reason = "kernel upgrades";
  t.teardown(() => {
    s.maintenance.status.active = false;
  });
  const run = await start({ nodeIds: ["db-1"], argv: ["true"] });
  t.equal(run.maintenanceWindow, "kernel upgrades");
  t.equal((await finished(run.id)).counts.succeeded, 1);
  t.equal(byName(run)["db-1"]?.status, "queued");
});

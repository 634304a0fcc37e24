import t from "tap";
import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import {
  AgentCommandService,
  CancelCommandRequestSchema,
  CommandOutputChunkSchema,
  RequestSchema,
  RunCommandRequestSchema,
  RunCommandResponseSchema,
} from "@orch/contracts";
import { eventually } from "@orch/kit/testing";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createCommandHandlers, LIVE_OUTPUT_BUDGET_BYTES } from "../src/commands/handlers.js";
import { createDispatcher } from "../src/link/dispatch.js";
import { AgentError } from "../src/runtime.js";
import { scratch } from "./state-harness.js";

// The served handlers called as the link calls them, running real processes.

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const published: { subject: string; data: Uint8Array }[] = [];
const handlers = createCommandHandlers({
  log: silent,
  publish: (subject, data) => void published.push({ subject, data }),
});

let n = 0;
const jobId = () => `01JOB${String(++n).padStart(4, "0")}`;
type Req = MessageInitShape<typeof RunCommandRequestSchema>;
const cancel = (id: string) =>
  handlers.cancelCommand(create(CancelCommandRequestSchema, { jobId: id }), { deadline: Date.now() + 5000 });
const run = (req: Req, deadlineMs = 60_000) =>
  handlers.runCommand(create(RunCommandRequestSchema, { jobId: jobId(), timeoutSeconds: 30, ...req }), {
    deadline: Date.now() + deadlineMs,
  });

/** The chunks published for a job, decoded, in order of publication. */
const chunksOf = (job: string) =>
  published
    .filter((p) => p.subject === `orch.state.output.${job}`)
    .map((p) => fromBinary(CommandOutputChunkSchema, p.data));
const streamed = (job: string, stream: string) =>
  Buffer.concat(
    chunksOf(job)
      .filter((c) => c.stream === stream)
      .map((c) => c.data),
  );

/** Live (not zombie: this sandbox's PID 1 does not reap orphans) processes of a process group. */
function groupMembers(pgid: number): number[] {
  const live: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const fields = readFileSync(`/proc/${d}/stat`, "utf8")
        .replace(/^.*\) /s, "")
        .split(" ");
      if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") live.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return live;
}
const groupGone = (pgid: number) => eventually(() => groupMembers(pgid).length === 0, 5000);

/** The first line the job printed (the shell's pid, `echo $$`), once it is published. */
const firstLine = (job: string) =>
  eventually(() => {
    const s = streamed(job, "stdout").toString();
    return s.includes("\n") ? s.slice(0, s.indexOf("\n")) : undefined;
  });

t.test("argv runs without a shell: output, exit code, streamed chunks", async (t) => {
  const id = jobId();
  const r = await handlers.runCommand(
    create(RunCommandRequestSchema, {
      jobId: id,
      argv: ["sh", "-c", 'echo out; echo err >&2; echo "$1"; exit 3', "sh", "a b;$(x)"],
      timeoutSeconds: 30,
    }),
    { deadline: Date.now() + 60_000 },
  );
  t.equal(r.exitCode, 3);
  t.equal(r.signal, "");
  t.notOk(r.timedOut);
  t.notOk(r.cancelled);
  t.equal(r.spawnError, "");
  t.equal(Buffer.from(r.stdout!).toString(), "out\na b;$(x)\n", "arguments reach the program verbatim");
  t.equal(Buffer.from(r.stderr!).toString(), "err\n");
  t.ok(r.durationMs! > 0);
  t.equal(streamed(id, "stdout").toString(), "out\na b;$(x)\n", "the stream carries the same bytes");
  t.equal(streamed(id, "stderr").toString(), "err\n");
  t.same(
    chunksOf(id).map((c) => c.seq),
    chunksOf(id).map((_, i) => i + 1),
    "seq 1, 2, 3... across both streams",
  );
  t.ok(chunksOf(id).every((c) => c.jobId === id));
});

t.test("script: /bin/sh without #!, its own interpreter with #!; the temp file is removed", async (t) => {
  const sh = await run({ script: 'echo "$0"\nA=1\necho "a=$A"\n' });
  const [file, out] = Buffer.from(sh.stdout!).toString().split("\n");
  t.equal(out, "a=1");
  t.match(file, /orch-cmd-[^/]+\/script$/);
  t.notOk(existsSync(dirname(file!)), "the script's directory is gone");
  const node = await run({ script: `#!${process.execPath}\nprocess.stdout.write(String(6 * 7))\n` });
  t.equal(Buffer.from(node.stdout!).toString(), "42");
  t.equal(node.exitCode, 0);
});

t.test("env is added to the agent's environment", async (t) => {
  const r = await run({ argv: ["sh", "-c", 'printf "%s|%s" "$GREETING" "$PATH"'], env: { GREETING: "hi there" } });
  t.equal(Buffer.from(r.stdout!).toString(), `hi there|${process.env.PATH}`);
});

t.test("a program that cannot start: spawn_error, exit -1", async (t) => {
  const r = await run({ argv: ["/nonexistent/orch-no-such-program", "x"] });
  t.match(r.spawnError, /ENOENT/);
  t.equal(r.exitCode, -1);
  t.notOk(r.timedOut);
});

t.test("timeout: timed_out, and no process of the group survives (background child included)", async (t) => {
  const id = jobId();
  const done = handlers.runCommand(
    create(RunCommandRequestSchema, {
      jobId: id,
      argv: ["sh", "-c", "echo $$; sleep 100 & echo $!; sleep 100"],
      timeoutSeconds: 1,
    }),
    { deadline: Date.now() + 60_000 },
  );
  const pgid = Number(await firstLine(id));
  const r = await done;
  t.ok(r.timedOut);
  t.notOk(r.cancelled);
  t.equal(r.exitCode, -1);
  t.equal(r.signal, "SIGTERM");
  const [leader, background] = Buffer.from(r.stdout!).toString().trim().split("\n").map(Number);
  t.equal(leader, pgid);
  t.ok(background! > 0);
  await groupGone(pgid);
  t.same(groupMembers(pgid), [], "the shell and both sleeps are gone");
});

t.test("cancel: SIGTERM to the group, cancelled=true, nothing left; unknown jobs are not found", async (t) => {
  const id = jobId();
  const done = handlers.runCommand(
    create(RunCommandRequestSchema, {
      jobId: id,
      argv: ["sh", "-c", "echo $$; sleep 60 & sleep 60"],
      timeoutSeconds: 300,
    }),
    { deadline: Date.now() + 600_000 },
  );
  const pgid = Number(await firstLine(id));
  t.ok(groupMembers(pgid).length >= 2, "running");
  t.same(await cancel(id), { found: true });
  const r = await done;
  t.ok(r.cancelled);
  t.notOk(r.timedOut);
  t.equal(r.exitCode, -1);
  t.equal(r.signal, "SIGTERM");
  await groupGone(pgid);
  t.same(groupMembers(pgid), []);
  t.same(await cancel(id), { found: false }, "ended");
  t.same(await cancel("01NEVER"), {
    found: false,
  });
});

t.test("cap: exactly cap bytes kept, truncated flags; the stream is not capped", async (t) => {
  const id = jobId();
  const r = await handlers.runCommand(
    create(RunCommandRequestSchema, {
      jobId: id,
      argv: ["sh", "-c", "head -c 5000 /dev/zero | tr '\\0' x; printf 'short' >&2"],
      timeoutSeconds: 30,
      outputCapBytes: 1000,
    }),
    { deadline: Date.now() + 60_000 },
  );
  t.equal(r.stdout!.length, 1000);
  t.equal(Buffer.from(r.stdout!).toString(), "x".repeat(1000));
  t.ok(r.stdoutTruncated);
  t.equal(Buffer.from(r.stderr!).toString(), "short");
  t.notOk(r.stderrTruncated);
  t.equal(streamed(id, "stdout").length, 5000);

  const big = await run({ argv: ["head", "-c", String(70 * 1024), "/dev/zero"] });
  t.equal(big.stdout!.length, 64 * 1024, "no cap given: 64 KiB");
  t.ok(big.stdoutTruncated);
  const huge = await run({
    argv: ["head", "-c", String(1024 * 1024 + 10), "/dev/zero"],
    outputCapBytes: 8 * 1024 * 1024,
  });
  t.equal(huge.stdout!.length, 1024 * 1024, "never above 1 MiB");
  t.ok(huge.stdoutTruncated);
});

t.test("the live stream stops at its budget; the answer still carries its capped output", async (t) => {
  const id = jobId();
  const total = LIVE_OUTPUT_BUDGET_BYTES + 256 * 1024;
  const r = await handlers.runCommand(
    create(RunCommandRequestSchema, {
      jobId: id,
      argv: ["head", "-c", String(total), "/dev/zero"],
      timeoutSeconds: 60,
      outputCapBytes: 4096,
    }),
    { deadline: Date.now() + 90_000 },
  );
  t.equal(r.exitCode, 0);
  t.equal(r.stdout!.length, 4096);
  t.ok(r.stdoutTruncated);
  const live = streamed(id, "stdout").length;
  t.ok(live <= LIVE_OUTPUT_BUDGET_BYTES, `published ${live} bytes, at most the budget`);
  t.ok(live > LIVE_OUTPUT_BUDGET_BYTES - 64 * 1024, "published up to the budget");
});

t.test("non-UTF-8 output is kept byte for byte, in the answer and the chunks", async (t) => {
  const id = jobId();
  const r = await handlers.runCommand(
    create(RunCommandRequestSchema, { jobId: id, argv: ["printf", "\\377\\376ok\\342\\202"], timeoutSeconds: 30 }),
    { deadline: Date.now() + 60_000 },
  );
  const want = [0xff, 0xfe, 0x6f, 0x6b, 0xe2, 0x82];
  t.same([...r.stdout!], want);
  t.same([...streamed(id, "stdout")], want, "an unfinished sequence at the end is published at exit");
  // Survives the wire as bytes.
  const wire = fromBinary(
    RunCommandResponseSchema,
    toBinary(RunCommandResponseSchema, create(RunCommandResponseSchema, r)),
  );
  t.same([...wire.stdout], want);
});

t.test("jobs run concurrently: each waits for the other to start", async (t) => {
  const dir = scratch(t, "orch-cmd-test-");
  const waitFor = (mine: string, other: string) =>
    run({
      argv: [
        "sh",
        "-c",
        `touch ${join(dir, mine)}; while [ ! -f ${join(dir, other)} ]; do sleep 0.05; done; echo ${mine}`,
      ],
      timeoutSeconds: 20,
    });
  const [a, b] = await Promise.all([waitFor("a", "b"), waitFor("b", "a")]);
  t.equal(Buffer.from(a.stdout!).toString(), "a\n");
  t.equal(Buffer.from(b.stdout!).toString(), "b\n");
  t.notOk(a.timedOut || b.timedOut);
});

t.test("refused requests: the agent checks them too", async (t) => {
  const refused = async (req: Req) =>
    run(req).then(
      () => undefined,
      (e: unknown) => (e instanceof AgentError ? [e.code, e.reason] : e),
    );
  t.same(await refused({ argv: ["true"], script: "true" }), ["INVALID_ARGUMENT", "invalid_command"]);
  t.same(await refused({}), ["INVALID_ARGUMENT", "invalid_command"]);
  t.same(await refused({ argv: ["true"], env: { "BAD-NAME": "x" } }), ["INVALID_ARGUMENT", "invalid_command"]);
  t.same(await refused({ argv: ["true"], timeoutSeconds: 0 }), ["INVALID_ARGUMENT", "invalid_timeout"]);
  t.same(await refused({ argv: ["true"], timeoutSeconds: 86_401 }), ["INVALID_ARGUMENT", "invalid_timeout"]);
  t.same(await refused({ argv: ["true"], jobId: "" }), ["INVALID_ARGUMENT", "invalid_argument"]);
  t.same(await refused({ argv: ["true"], jobId: "a.b" }), ["INVALID_ARGUMENT", "invalid_argument"]);

  const id = jobId();
  const first = run({ jobId: id, argv: ["sh", "-c", "echo $$; sleep 30"] });
  const pgid = Number(await firstLine(id));
  t.same(await refused({ jobId: id, argv: ["true"] }), ["INVALID_ARGUMENT", "invalid_argument"], "a running job id");
  t.same(await cancel(id), { found: true });
  t.ok((await first).cancelled, "the duplicate did not replace the first job");
  await groupGone(pgid);
});

t.test("the dispatcher's DEADLINE_EXCEEDED kills the job's process group too", async (t) => {
  const dispatcher = createDispatcher(silent);
  dispatcher.serve(AgentCommandService, handlers);
  const id = jobId();
  const payload = toBinary(
    RunCommandRequestSchema,
    create(RunCommandRequestSchema, {
      jobId: id,
      argv: ["sh", "-c", "echo $$; sleep 60 & sleep 60"],
      timeoutSeconds: 300,
    }),
  );
  const answer = dispatcher.handle(
    create(RequestSchema, {
      id: 7n,
      method: AgentCommandService.method.runCommand.name,
      payload,
      deadline: Date.now() + 3000,
    }),
    { approved: true },
  );
  const pgid = Number(await firstLine(id));
  const res = await answer;
  t.equal(res.error?.code, "DEADLINE_EXCEEDED");
  await groupGone(pgid);
  t.same(groupMembers(pgid), [], "no orphan left behind");
  await eventually(async () => (await cancel(id)).found === false);
  t.pass("the job is unregistered once it ended");
});

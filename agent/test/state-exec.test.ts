import t from "tap";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { byId, scratch, stateHarness, type Res } from "./state-harness.js";

const h = await stateHarness();

/** Gone or a zombie (this sandbox's PID 1 does not reap orphans), polled briefly while the kill lands. */
async function dead(pid: number): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    let state = "gone";
    try {
      state = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /s, "")[0] ?? "gone";
    } catch {
      // no such process
    }
    if (state === "gone" || state === "Z" || state === "X") return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

t.test("exec runs in apply with env and cwd, output captured; plan never runs it", async (t) => {
  const dir = scratch(t);
  const res: Res = {
    id: "hello",
    type: "exec",
    spec: { command: "echo out-$GREETING; echo err-line >&2; pwd > ran", env: { GREETING: "hi" }, cwd: dir },
  };
  const plan = byId(await h.execute("plan", [res])).hello!;
  t.equal(plan.status, "changed");
  t.match(plan.diff, /^run: echo out-\$GREETING/);
  t.same(plan.observed, { would_run: true });
  t.notOk(existsSync(join(dir, "ran")), "plan did not run the command");

  const apply = byId(await h.execute("apply", [res])).hello!;
  t.equal(apply.status, "changed");
  t.equal(apply.stdout, "out-hi\n");
  t.equal(apply.stderr, "err-line\n");
  t.equal(readFileSync(join(dir, "ran"), "utf8"), `${dir}\n`);
  t.same(apply.observed, { ran: true, exit_code: 0, timed_out: false });
});

t.test("script: shell by default, its own interpreter with #!", async (t) => {
  const dir = scratch(t);
  const r = byId(
    await h.execute("apply", [
      { id: "sh", type: "exec", spec: { script: 'set -e\nA=1\necho "a=$A"\n' } },
      { id: "node", type: "exec", spec: { script: `#!${process.execPath}\nconsole.log(6 * 7)\n`, cwd: dir } },
    ]),
  );
  t.equal(r.sh!.stdout, "a=1\n");
  t.equal(r.node!.stdout, "42\n");
  t.equal(r.node!.status, "changed");
});

t.test(
  "creates / onlyif / unless decide in plan and apply alike; guards are evaluated, the command is not",
  async (t) => {
    const dir = scratch(t);
    writeFileSync(join(dir, "exists"), "");
    const mk = (id: string, guard: Record<string, string>): Res => ({
      id,
      type: "exec",
      spec: { command: `touch ${join(dir, `${id}.ran`)}`, ...guard },
    });
    const mod = [
      mk("creates-hit", { creates: join(dir, "exists") }),
      mk("creates-miss", { creates: join(dir, "nope") }),
      mk("onlyif-true", { onlyif: "true" }),
      mk("onlyif-false", { onlyif: "exit 3" }),
      mk("unless-true", { unless: `test -f ${join(dir, "exists")}` }),
      mk("unless-false", { unless: "false" }),
    ];
    const plan = byId(await h.execute("plan", mod));
    const runs = (r: Record<string, { changed: boolean }>) =>
      Object.entries(r)
        .filter(([, v]) => v.changed)
        .map(([k]) => k)
        .sort();
    t.same(runs(plan), ["creates-miss", "onlyif-true", "unless-false"]);
    t.match(plan["creates-hit"]!.message, /exists \(creates\)/);
    t.match(plan["onlyif-false"]!.message, /onlyif exited 3/);
    t.match(plan["unless-true"]!.message, /unless exited 0/);
    t.same(runs(byId(await h.execute("plan", mod))), runs(plan), "plan is repeatable");
    t.notOk(
      ["creates-miss", "onlyif-true", "unless-false"].some((id) => existsSync(join(dir, `${id}.ran`))),
      "plan ran no command",
    );

    const apply = byId(await h.execute("apply", mod));
    t.same(runs(apply), runs(plan), "apply did exactly what plan said");
    t.ok(
      existsSync(join(dir, "creates-miss.ran")) &&
        existsSync(join(dir, "onlyif-true.ran")) &&
        existsSync(join(dir, "unless-false.ran")),
    );
    t.notOk(
      existsSync(join(dir, "creates-hit.ran")) ||
        existsSync(join(dir, "onlyif-false.ran")) ||
        existsSync(join(dir, "unless-true.ran")),
    );
  },
);

t.test("an exec guarded by creates is idempotent: the second apply changes nothing", async (t) => {
  const dir = scratch(t);
  const res: Res = {
    id: "init",
    type: "exec",
    spec: { command: `echo init >> ${join(dir, "log")}; touch ${join(dir, "done")}`, creates: join(dir, "done") },
  };
  t.equal(byId(await h.execute("apply", [res])).init!.status, "changed");
  const second = byId(await h.execute("apply", [res])).init!;
  t.equal(second.status, "ok");
  t.equal(second.changed, false);
  t.equal(readFileSync(join(dir, "log"), "utf8"), "init\n", "ran once");
});

t.test(
  "a failed exec fails with its exit code, skips its dependents transitively; independent resources still run",
  async (t) => {
    const dir = scratch(t);
    const mod: Res[] = [
      { id: "broken", type: "exec", spec: { command: "echo partial; echo boom >&2; exit 7" } },
      { id: "child", type: "file", spec: { path: join(dir, "child"), content: "x" }, requires: ["m/broken"] },
      { id: "grandchild", type: "exec", spec: { command: `touch ${join(dir, "gc")}` }, requires: ["child"] },
      { id: "independent", type: "file", spec: { path: join(dir, "independent"), content: "y" } },
      { id: "other-module", module: "n", type: "exec", spec: { command: "true" }, requires: ["m/independent"] },
    ];
    const res = await h.execute("apply", mod);
    const r = byId(res);
    t.equal(r.broken!.status, "failed");
    t.match(r.broken!.message, /exited with code 7/);
    t.equal(r.broken!.stdout, "partial\n");
    t.equal(r.broken!.stderr, "boom\n");
    t.equal(r.child!.status, "skipped");
    t.match(r.child!.message, /requires m\/broken, which is failed/);
    t.equal(r.grandchild!.status, "skipped");
    t.match(r.grandchild!.message, /requires m\/child, which is skipped/);
    t.equal(r.independent!.status, "changed");
    t.equal(r["other-module"]!.status, "changed");
    t.notOk(existsSync(join(dir, "child")) || existsSync(join(dir, "gc")), "nothing of the skipped chain happened");
    t.ok(existsSync(join(dir, "independent")));
    t.same(
      res.map((x) => x.id),
      ["broken", "child", "grandchild", "independent", "other-module"],
      "results in execution order",
    );
  },
);

t.test("timeout kills the whole process group and fails the resource", async (t) => {
  const dir = scratch(t);
  const pidFile = join(dir, "bg.pid");
  // The shell starts a background sleeper in the same group, then waits: both must die.
  const r = byId(
    await h.execute("apply", [
      {
        id: "slow",
        type: "exec",
        spec: { command: `sleep 300 & echo $! > ${pidFile}; echo started; wait`, timeout_seconds: 1 },
      },
    ]),
  ).slow!;
  t.equal(r.status, "failed");
  t.match(r.message, /timed out after 1 s; its process group was killed/);
  t.equal(r.stdout, "started\n");
  const pid = Number(readFileSync(pidFile, "utf8"));
  t.ok(pid > 0);
  t.ok(await dead(pid), "the background child of the shell was killed too");
});

t.test("the operation deadline bounds a command and skips what could not start", async (t) => {
  const res = await h.execute(
    "apply",
    [
      { id: "long", type: "exec", spec: { command: "sleep 30", timeout_seconds: 300 } },
      { id: "after", type: "exec", spec: { command: "true" } },
    ],
    { timeoutMs: 3000 },
  );
  const r = byId(res);
  t.equal(r.long!.status, "failed");
  t.match(r.long!.message, /timed out/);
  t.equal(r.after!.status, "skipped");
  t.match(r.after!.message, /deadline/);
});

t.test("output is capped at 1 MiB per stream, with a note", async (t) => {
  const r = byId(
    await h.execute("apply", [
      { id: "big", type: "exec", spec: { command: "head -c 3000000 /dev/zero | tr '\\0' a" } },
    ]),
  ).big!;
  t.equal(r.status, "changed");
  t.ok(r.stdout.startsWith("a".repeat(1024 * 1024)));
  t.match(r.stdout, /\[output truncated: 1951424 more bytes not captured\]/);
  t.ok(r.stdout.length < 1024 * 1024 + 100);
});

t.test("mask strings never appear in stdout, stderr, message or diff", async (t) => {
  const secret = "tok-9f8e7d6c";
  const r = byId(
    await h.execute(
      "apply",
      [
        {
          id: "leaky",
          type: "exec",
          spec: { command: `echo using ${secret}; echo ${secret} >&2; exit 1`, env: { TOKEN: secret } },
        },
      ],
      { mask: [secret] },
    ),
  ).leaky!;
  const all = JSON.stringify(r);
  t.notMatch(all, secret);
  t.equal(r.stdout, "using ***\n");
  t.equal(r.stderr, "***\n");
  t.match(r.diff, /run: echo using \*\*\*/);
});

t.test("exec spec errors: both or neither of command/script, bad timeout", async (t) => {
  const r = byId(
    await h.execute("plan", [
      { id: "both", type: "exec", spec: { command: "true", script: "true" } },
      { id: "neither", type: "exec", spec: {} },
      { id: "badtimeout", type: "exec", spec: { command: "true", timeout_seconds: 0 } },
    ]),
  );
  t.match(r.both!.message, /exactly one of "command" or "script"/);
  t.match(r.neither!.message, /exactly one of "command" or "script"/);
  t.match(r.badtimeout!.message, /timeout_seconds/);
  t.ok(Object.values(r).every((x) => x.status === "failed"));
});

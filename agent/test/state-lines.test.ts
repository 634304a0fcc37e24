import t, { type Test } from "tap";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { AgentStateService, ExecuteRequestSchema, type ResourceResult } from "@orch/contracts";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseOptions, UsageError } from "../src/options.js";
import type { AgentHandlers } from "../src/runtime.js";
import { stateFeature } from "../src/state/feature.js";
import { CRON_HEADER } from "../src/state/providers/cron.js";
import { scratch, stubRuntime } from "./state-harness.js";

// line / block / cron providers through the served Execute handler, on real files under a temp dir.

const cronRoot = scratch(t, "orch-cron-");
const cronDir = join(cronRoot, "cron.d");
mkdirSync(cronDir);

const { rt, served } = stubRuntime();
await stateFeature({ ...rt, options: { ...rt.options, cronDir } });
const handlers = served.get(AgentStateService.typeName) as AgentHandlers<typeof AgentStateService>;

/** One resource, planned or applied; its result. */
async function run(mode: "plan" | "apply", type: string, spec: JsonObject): Promise<ResourceResult> {
  const req = create(ExecuteRequestSchema, {
    operationId: "",
    mode,
    mask: [],
    resources: [{ id: "r", module: "m", type, spec, requires: [] }],
  });
  const res = await handlers.execute(req, { deadline: Date.now() + 60_000 });
  return (res.results ?? [])[0] as ResourceResult;
}

/** plan shows a change; apply makes it; a second apply and a plan change nothing. */
async function converge(t: Test, type: string, spec: JsonObject): Promise<ResourceResult> {
  const plan = await run("plan", type, spec);
  t.equal(plan.status, "changed", "plan: would change");
  const apply = await run("apply", type, spec);
  t.equal(apply.status, "changed", `apply: ${apply.message}`);
  t.equal(apply.diff, plan.diff, "apply changed exactly what plan showed");
  const again = await run("apply", type, spec);
  t.same([again.status, again.changed, again.diff], ["ok", false, ""], "second apply: zero changes");
  t.equal((await run("plan", type, spec)).status, "ok", "second plan: nothing to change");
  return plan;
}

const read = (p: string) => readFileSync(p, "utf8");

t.test("line: plan diff, apply, idempotent, hand edit is drift, absent removes", async (t) => {
  const f = join(scratch(t), "sshd_config");
  writeFileSync(f, "Port 22\n#PermitRootLogin yes\nUsePAM yes\n");
  chmodSync(f, 0o600);
  const ino = statSync(f).ino;
  const spec = { path: f, line: "PermitRootLogin no", match: "^#?PermitRootLogin" };

  const plan = await converge(t, "line", spec);
  t.match(plan.diff, /^--- .*sshd_config\tcurrent$/m);
  t.match(plan.diff, /^-#PermitRootLogin yes$/m);
  t.match(plan.diff, /^\+PermitRootLogin no$/m);
  t.notMatch(plan.diff, /^[-+]Port 22$/m, "other lines are context");
  t.equal(read(f), "Port 22\nPermitRootLogin no\nUsePAM yes\n", "the matching line is replaced in place");
  t.equal(statSync(f).mode & 0o7777, 0o600, "an existing file keeps its mode");
  t.not(statSync(f).ino, ino, "written atomically (a new inode renamed over the file)");
  t.same(readdirSync(join(f, "..")), ["sshd_config"], "no temp file left behind");

  writeFileSync(f, "Port 22\nPermitRootLogin yes\nUsePAM yes\n");
  const drift = await run("plan", "line", spec);
  t.equal(drift.status, "changed", "a hand edit is drift");
  t.match(drift.diff, /^-PermitRootLogin yes$/m);
  t.equal((await run("apply", "line", spec)).status, "changed");
  t.equal(read(f), "Port 22\nPermitRootLogin no\nUsePAM yes\n");

  const absent = { path: f, match: "^PermitRootLogin", state: "absent" };
  t.match((await run("plan", "line", absent)).diff, /^-PermitRootLogin no$/m);
  t.equal((await run("apply", "line", absent)).status, "changed");
  t.equal(read(f), "Port 22\nUsePAM yes\n");
  t.equal((await run("apply", "line", absent)).status, "ok", "absent twice: nothing left to remove");
});

t.test("line: the last match is replaced; without a match the line is inserted where asked", async (t) => {
  const dir = scratch(t);
  const f = join(dir, "conf");
  writeFileSync(f, "a=1\n[main]\nx=1\nx=2\n[other]\ny=1\n");
  await converge(t, "line", { path: f, line: "x=9", match: "^x=" });
  t.equal(read(f), "a=1\n[main]\nx=1\nx=9\n[other]\ny=1\n", "only the last matching line");

  await converge(t, "line", { path: f, line: "z=1", match: "^z=", insert_after: "^\\[main\\]" });
  t.equal(read(f), "a=1\n[main]\nz=1\nx=1\nx=9\n[other]\ny=1\n", "after the last line matching insert_after");

  await converge(t, "line", { path: f, line: "w=1", insert_before: "^\\[" });
  t.equal(read(f), "a=1\nw=1\n[main]\nz=1\nx=1\nx=9\n[other]\ny=1\n", "before the first line matching insert_before");

  await converge(t, "line", { path: f, line: "# top", insert_before: "BOF" });
  await converge(t, "line", { path: f, line: "# end", insert_after: "^nothing-matches" });
  t.equal(read(f), "# top\na=1\nw=1\n[main]\nz=1\nx=1\nx=9\n[other]\ny=1\n# end\n", "BOF; no match → end");

  const g = join(dir, "noeol");
  writeFileSync(g, "one\ntwo");
  await converge(t, "line", { path: g, line: "three" });
  t.equal(read(g), "one\ntwo\nthree\n", "appended after a last line without a newline");

  // A line that does not match its own `match` is still found: re-apply does not insert it again.
  await converge(t, "line", { path: g, line: "four", match: "^nothing" });
  t.equal(
    read(g)
      .split("\n")
      .filter((l) => l === "four").length,
    1,
  );
});

t.test("line: a missing file fails unless create is true; bad specs fail with the field", async (t) => {
  const dir = scratch(t);
  const f = join(dir, "missing.conf");
  const plan = await run("plan", "line", { path: f, line: "x" });
  t.equal(plan.status, "changed");
  t.match(plan.message, /apply would fail: .*does not exist \(set create: true/);
  const apply = await run("apply", "line", { path: f, line: "x" });
  t.equal(apply.status, "failed");
  t.match(apply.message, /missing\.conf does not exist \(set create: true/);
  t.notOk(existsSync(f), "nothing created");

  await converge(t, "line", { path: f, line: "x", create: true });
  t.equal(read(f), "x\n");
  t.equal(statSync(f).mode & 0o7777, 0o644);
  t.equal((await run("apply", "line", { path: join(dir, "gone"), line: "x", state: "absent" })).status, "ok");

  const bad = await run("apply", "line", { path: f, line: "y", match: "([" });
  t.equal(bad.status, "failed");
  t.match(bad.message, /field "match" must be a valid regular expression/);
  t.match((await run("apply", "line", { path: f, line: "a\nb" })).message, /"line" must be one line/);
  t.match((await run("apply", "line", { path: f })).message, /"line" is required/);
  t.match(
    (await run("apply", "line", { path: f, line: "y", insert_after: "a", insert_before: "b" })).message,
    /at most one of/,
  );
  t.equal(read(f), "x\n", "refused specs changed nothing");

  const bin = join(dir, "latin1");
  writeFileSync(bin, Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]));
  const r = await run("apply", "line", { path: bin, line: "x" });
  t.equal(r.status, "failed");
  t.match(r.message, /is not a UTF-8 text file/);
  t.same(readFileSync(bin), Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]), "a non-UTF-8 file is never rewritten");
});

t.test("block: markers make re-apply replace the block; hand edit is drift; absent removes it", async (t) => {
  const f = join(scratch(t), "hosts");
  writeFileSync(f, "127.0.0.1 localhost\n::1 localhost\n");
  chmodSync(f, 0o640);
  const spec = { path: f, content: "10.0.0.1 db\n10.0.0.2 cache\n", insert_after: "^127\\." };

  const plan = await converge(t, "block", spec);
  t.match(plan.diff, /^\+# BEGIN ORCH MANAGED BLOCK$/m);
  t.match(plan.diff, /^\+10\.0\.0\.1 db$/m);
  const managed = "# BEGIN ORCH MANAGED BLOCK\n10.0.0.1 db\n10.0.0.2 cache\n# END ORCH MANAGED BLOCK\n";
  t.equal(read(f), `127.0.0.1 localhost\n${managed}::1 localhost\n`);
  t.equal(statSync(f).mode & 0o7777, 0o640, "mode kept");

  writeFileSync(f, read(f).replace("10.0.0.2 cache", "10.9.9.9 evil"));
  const drift = await run("plan", "block", spec);
  t.equal(drift.status, "changed", "an edit inside the block is drift");
  t.match(drift.diff, /^-10\.9\.9\.9 evil$/m);
  t.equal((await run("apply", "block", spec)).status, "changed");
  t.equal(read(f), `127.0.0.1 localhost\n${managed}::1 localhost\n`, "restored");

  const changed = { ...spec, content: "10.0.0.3 queue" };
  await converge(t, "block", changed);
  t.equal(
    read(f),
    "127.0.0.1 localhost\n# BEGIN ORCH MANAGED BLOCK\n10.0.0.3 queue\n# END ORCH MANAGED BLOCK\n::1 localhost\n",
    "new content replaces the old block between the markers, in place, once",
  );

  const absent = { path: f, state: "absent" };
  t.equal((await run("apply", "block", absent)).status, "changed");
  t.equal(read(f), "127.0.0.1 localhost\n::1 localhost\n", "removed with its markers");
  t.equal((await run("apply", "block", absent)).status, "ok");
});

t.test("block: custom markers keep blocks apart; an unmatched marker is refused", async (t) => {
  const f = join(scratch(t), "profile");
  const a = { path: f, content: "export A=1", marker: "## {mark} app A", create: true };
  const b = { path: f, content: "export B=2", marker: "## {mark} app B", insert_before: "BOF" };
  await converge(t, "block", a);
  await converge(t, "block", b);
  t.equal(read(f), "## BEGIN app B\nexport B=2\n## END app B\n## BEGIN app A\nexport A=1\n## END app A\n");

  writeFileSync(f, "## BEGIN app A\nexport A=1\n");
  const plan = await run("plan", "block", a);
  t.match(plan.message, /unmatched marker/);
  const apply = await run("apply", "block", a);
  t.equal(apply.status, "failed");
  t.match(apply.message, /unmatched marker/);
  t.equal(read(f), "## BEGIN app A\nexport A=1\n", "left for a person to fix");
  t.match((await run("apply", "block", { path: f, content: "x", marker: "# managed" })).message, /\{mark\}/);
  t.equal((await run("apply", "block", { path: join(f, "..", "nope"), content: "x" })).status, "failed");
});

t.test("cron: the file's content and mode; idempotent; hand edit and mode are drift; absent removes", async (t) => {
  const spec = {
    name: "backup",
    schedule: "30 2 * * mon-fri",
    command: "/usr/local/bin/backup --quiet",
    user: "backup",
    env: { MAILTO: "ops@example.com", PATH: "/usr/bin:/bin" },
  };
  const f = join(cronDir, "backup");
  const plan = await converge(t, "cron", spec);
  t.match(plan.diff, /^# create file \(mode 0644\)$/m);
  t.match(plan.diff, /^\+30 2 \* \* mon-fri backup \/usr\/local\/bin\/backup --quiet$/m);
  t.equal(
    read(f),
    `${CRON_HEADER}\nMAILTO=ops@example.com\nPATH=/usr/bin:/bin\n30 2 * * mon-fri backup /usr/local/bin/backup --quiet\n`,
  );
  t.equal(statSync(f).mode & 0o7777, 0o644);

  writeFileSync(f, read(f).replace("30 2", "0 3"));
  const drift = await run("plan", "cron", spec);
  t.equal(drift.status, "changed");
  t.match(drift.diff, /^-0 3 \* \* mon-fri/m);
  t.equal((await run("apply", "cron", spec)).status, "changed");

  chmodSync(f, 0o664);
  const modeDrift = await run("plan", "cron", spec);
  t.equal(modeDrift.status, "changed", "cron ignores a group-writable file: mode is managed");
  t.match(modeDrift.diff, /^# mode 0664 -> 0644$/m);
  t.equal((await run("apply", "cron", spec)).message, "attributes updated");
  t.equal(statSync(f).mode & 0o7777, 0o644);

  const root = { name: "reboot-note", schedule: "@reboot", command: "logger booted" };
  await converge(t, "cron", root);
  t.match(read(join(cronDir, "reboot-note")), /^@reboot root logger booted$/m, "user defaults to root");

  t.equal((await run("apply", "cron", { name: "backup", state: "absent" })).status, "changed");
  t.notOk(existsSync(f), "absent removes the file");
  t.equal((await run("apply", "cron", { name: "backup", state: "absent" })).status, "ok");
});

t.test("cron: an invalid rendered schedule, name, command or user is refused on the agent", async (t) => {
  const base = { name: "job", schedule: "* * * * *", command: "true" };
  const refused: Array<[JsonObject, RegExp]> = [
    [{ ...base, schedule: "61 * * * *" }, /"schedule" is invalid: minute 61 is out of range 0-59/],
    [{ ...base, schedule: "* * * *" }, /"schedule" must be 5 fields/],
    [{ ...base, schedule: "@every" }, /"schedule" is invalid: '@every' is not one of/],
    [{ ...base, name: "../etc/passwd" }, /"name" must be 1-64 characters/],
    [{ ...base, name: "job.sh" }, /"name" must be/],
    [{ ...base, command: "a\nb" }, /"command" must be one line/],
    [{ ...base, user: "two words" }, /"user" must be a user name/],
    [{ ...base, env: { "BAD-KEY": "x" } }, /"env\.BAD-KEY" must be an environment variable name/],
  ];
  for (const [spec, re] of refused) {
    const r = await run("apply", "cron", spec);
    t.equal(r.status, "failed", JSON.stringify(spec));
    t.match(r.message, re);
  }
  t.notOk(existsSync(join(cronDir, "job")), "nothing written");
});

t.test("cron: a missing cron directory makes the type unsupported", async (t) => {
  const { rt: rt2, served: s2 } = stubRuntime();
  await stateFeature({ ...rt2, options: { ...rt2.options, cronDir: join(scratch(t), "no-cron") } });
  const h2 = s2.get(AgentStateService.typeName) as AgentHandlers<typeof AgentStateService>;
  const req = create(ExecuteRequestSchema, {
    mode: "plan",
    resources: [{ id: "c", module: "m", type: "cron", spec: { name: "x", schedule: "@daily", command: "true" } }],
  });
  const r = ((await h2.execute(req, { deadline: Date.now() + 10_000 })).results ?? [])[0] as ResourceResult;
  t.equal(r.status, "unsupported");
  t.match(r.message, /no-cron does not exist \(is cron installed\?\)/);
});

t.test("options: --cron-dir and ORCH_AGENT_CRON_DIR, absolute only", async (t) => {
  const server = ["--server", "h:1"];
  t.match(parseOptions(server, {}), { cronDir: "/etc/cron.d" });
  t.match(parseOptions(server, { ORCH_AGENT_CRON_DIR: "/env/cron" }), { cronDir: "/env/cron" });
  t.match(parseOptions([...server, "--cron-dir", "/flag"], { ORCH_AGENT_CRON_DIR: "/env" }), { cronDir: "/flag" });
  t.throws(() => parseOptions([...server, "--cron-dir", "rel"], {}), /--cron-dir must be an absolute path/);
  t.throws(
    () => parseOptions([...server, "--cron-dir", "rel"], {}),
    new UsageError('--cron-dir must be an absolute path, got "rel"'),
  );
});

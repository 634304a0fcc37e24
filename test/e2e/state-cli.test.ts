import t from "tap";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "@orch/kit/testing";
import { run } from "../../cli/src/program.js";
import { startStateStack } from "./lib/state-stack.js";

// orchctl modules / assignments / apply / plan / drift / ops / state against real processes and a
// real orch-agent, orchctl run in-process with a terminal-like or a plain stdout.
const { linkPort, system, agents, dir } = await startStateStack(t, { name: "state-cli", keyByte: 3 });

const env = { HOME: dir, ORCHCTL_HOME: join(dir, "home"), ORCH_URL: system.url };
async function orchctl(args: string[], o: { tty?: boolean } = {}) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: { write: (s: string) => (stdout += s), ...(o.tty ? { isTTY: true } : {}) } as { write(s: string): unknown },
    stderr: { write: (s: string) => (stderr += s) },
    env,
  });
  return { code, stdout, stderr };
}
const pem = join(dir, "admin.pem");
writeFileSync(pem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const login = await orchctl(["login", "--key", pem]);
if (login.code !== 0) throw new Error(login.stderr);

const token = await system.login(system.admin);
const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--no-terminal"]);
const nodeId = await proc.nodeId();
await eventually(
  async () => (await system.api("GET", `/api/v1/agents/${nodeId}`, { token })).body?.connected === true,
  20_000,
);
await system.api("POST", `/api/v1/agents/${nodeId}`, { token, body: { status: "approved", name: "cli-1" } });
await system.api("PUT", `/api/v1/agents/${nodeId}/tags`, { token, body: { tags: { env: "test" } } });

const moduleFile = join(dir, "motd.yaml");
writeFileSync(
  moduleFile,
  [
    "name: motd",
    "description: message of the day",
    "resources:",
    "  - id: motd",
    "    type: file",
    `    path: ${dir}/motd`,
    '    content: "welcome to {{ tags.env }}\\n"',
    "  - { id: hello, type: exec, command: 'echo hello from cli; touch " +
      dir +
      "/motd.done', creates: '" +
      dir +
      "/motd.done', requires: [motd] }",
    "",
  ].join("\n"),
);

t.test("modules push | list | show | rm", async (t) => {
  const push = await orchctl(["modules", "push", moduleFile]);
  t.equal(push.code, 0, push.stderr);
  t.match(push.stdout, /Uploaded module motd \(2 resources/);
  const list = await orchctl(["--json", "modules", "list"]);
  t.same(
    JSON.parse(list.stdout).modules.map((m: any) => m.name),
    ["motd"],
  );
  const show = await orchctl(["modules", "show", "motd"]);
  t.match(show.stdout, /description:\s+message of the day/);
  t.match(show.stdout, /content: "welcome to \{\{ tags.env \}\}\\n"/, "prints the YAML");
  const bad = join(dir, "bad.yaml");
  writeFileSync(bad, "name: bad\nresources:\n  - id: a\n    type: nope\n");
  const refused = await orchctl(["modules", "push", bad]);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /resources\[0\]\.type \(line 4\).*\(unknown_resource_type\)/);
  writeFileSync(join(dir, "gone.yaml"), "name: gone\nresources: []\n");
  t.equal((await orchctl(["modules", "push", join(dir, "gone.yaml")])).code, 0);
  t.equal((await orchctl(["modules", "rm", "gone"])).code, 0);
  t.match((await orchctl(["modules", "show", "gone"])).stderr, /module_not_found/);
});

t.test(
  "plan on a terminal: coloured unified diff; apply follows to the end; plain output without colour",
  async (t) => {
    const plan = await orchctl(["plan", "cli-1", "-m", "motd"], { tty: true });
    t.equal(plan.code, 0, plan.stderr);
    t.match(plan.stdout, /plan \S+ on cli-1: \x1b\[32msucceeded\x1b\[0m — 2 changed/);
    t.match(plan.stdout, /\x1b\[32m\+welcome to test\x1b\[0m/, "added lines in green");
    const apply = await orchctl(["apply", "cli-1", "-m", "motd"]);
    t.equal(apply.code, 0, apply.stderr);
    t.notMatch(apply.stdout, /\x1b\[/, "no colour when stdout is not a terminal");
    t.match(apply.stdout, /apply \S+ on cli-1: succeeded — 2 changed/);
    t.match(apply.stdout, /changed\s+motd\/motd \(file\)/);
    t.match(apply.stdout, /^\s+\+welcome to test$/m);
    t.match(apply.stderr, /apply \S+ on cli-1: (pending|running)/, "progress on stderr");

    const json = await orchctl(["--json", "apply", "cli-1", "-m", "motd"]);
    const op = JSON.parse(json.stdout);
    t.equal(op.status, "succeeded");
    t.same(
      op.summary,
      { ok: 2, changed: 0, failed: 0, skipped: 0, unsupported: 0 },
      "one JSON document: the finished operation",
    );
  },
);

t.test("ops list | show | output, state, drift --check", async (t) => {
  const list = JSON.parse((await orchctl(["--json", "ops", "list", "--agent", "cli-1", "--kind", "apply"])).stdout);
  t.equal(list.operations.length, 2);
  const first = list.operations[1];
  const show = await orchctl(["ops", "show", first.id]);
  t.match(show.stdout, /changed\s+motd\/hello \(exec\)/);
  const out = await orchctl(["ops", "output", first.id]);
  t.match(out.stdout, /== motd\/hello stdout\nhello from cli/);
  const state = await orchctl(["state", "cli-1"]);
  t.match(state.stdout, /motd\s+motd\s+file\s+ok/);
  writeFileSync(join(dir, "motd"), "tampered\n");
  const drift = await orchctl(["drift", "cli-1", "--check"]);
  t.equal(drift.code, 1, `drift found: exit 1 (docs/modules.md#orchctl)\n${drift.stderr}`);
  t.equal(drift.stderr.includes("error:"), false, "the verdict is the output, not an error");
  t.match(drift.stdout, /^drifted: 1 resource differs/m);
  t.match(drift.stdout, /^\s+-tampered$/m);
  const latest = JSON.parse((await orchctl(["--json", "drift", "cli-1"])).stdout);
  t.equal(latest.drifted, true);
});

t.test("assignments create | list | show | plan | apply | rm", async (t) => {
  const created = await orchctl([
    "assignments",
    "create",
    "tests",
    "--selector",
    "env=test",
    "-m",
    "motd",
    "--description",
    "test nodes",
  ]);
  t.equal(created.code, 0, created.stderr);
  const badSel = await orchctl(["assignments", "create", "bad", "--selector", "env=", "-m", "motd"]);
  t.match(badSel.stderr, /position 4.*\(invalid_selector\)/);
  t.match((await orchctl(["assignments", "list"])).stdout, /tests\s+env=test\s+motd\s+no\s+test nodes/);
  t.match((await orchctl(["assignments", "show", "tests"])).stdout, /selector:\s+env=test/);
  const apply = await orchctl(["assignments", "apply", "tests"]);
  t.equal(apply.code, 0, apply.stderr);
  t.match(apply.stderr, /cli-1\s+(pending|running|succeeded)/, "live per-agent progress");
  t.match(apply.stdout, /run \S+ completed: 1 agent, 0 failures/);
  t.match(apply.stdout, /changed\s+motd\/motd/, "the drifted file was restored");
  const plan = JSON.parse((await orchctl(["--json", "assignments", "plan", "tests", "--batch", "1"])).stdout);
  t.equal(plan.status, "completed");
  t.equal(plan.results[0].summary.changed, 0);
  t.equal((await orchctl(["modules", "rm", "motd"])).code, 1, "in use");
  t.equal((await orchctl(["assignments", "rm", "tests"])).code, 0);
});

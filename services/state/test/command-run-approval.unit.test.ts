import t from "tap";
import { contentHash } from "@orch/contracts";
import { commandSpecOf, describeRun, frozenCommandRun } from "../src/approvals/command-run.js";
import type { Resolved } from "../src/commands/targets.js";
import { checkStart, type CommandSpec } from "../src/commands/validate.js";
import type { AgentInfo } from "../src/deps.js";

// What the approval of a command run binds to (docs/approvals.md, command.run): the command and the
// agents it resolved to; the order they resolved in does not matter, env never enters.
const agent = (nodeId: string, name: string): Resolved => ({
  kind: "agent",
  agent: { nodeId, name, status: "approved", connected: true, tags: {}, attributes: {} } satisfies AgentInfo,
});
const start = (over: Partial<Parameters<typeof checkStart>[0]> = {}): CommandSpec =>
  checkStart({
    selector: "env=prod",
    nodeIds: [],
    argv: ["sh", "-c", "uptime"],
    script: "",
    env: {},
    timeoutSeconds: 300,
    batch: "",
    ...over,
  });
const targets = [agent("B", "web-2"), agent("A", "web-1")];
const base = frozenCommandRun(start(), targets);

t.test("the content names the command, how it runs and the sorted targets", async (t) => {
  t.same(base.content, {
    command: ["sh", "-c", "uptime"],
    script: null,
    timeout_s: 300,
    batch: null,
    max_failures: null,
    selector: "env=prod",
    node_ids: null,
    targets: [
      { node_id: "A", name: "web-1" },
      { node_id: "B", name: "web-2" },
    ],
    env_keys: [],
  });
  t.equal(base.hash, contentHash(base.content), "the canonical hash every service computes");
  t.match(base.hash, /^[0-9a-f]{64}$/);
});

t.test("the same run resolved in another order hashes the same", async (t) => {
  t.equal(frozenCommandRun(start(), [...targets].reverse()).hash, base.hash);
});

t.test("env values never enter the content, nor change the hash", async (t) => {
  const withEnv = frozenCommandRun(start({ env: { TOKEN: "s3cret" } }), targets);
  t.equal(withEnv.hash, base.hash);
  t.notMatch(JSON.stringify(withEnv.content), /s3cret|TOKEN/);
});

t.test("anything that decides what runs where changes the hash", async (t) => {
  const changed: [string, CommandSpec, Resolved[]][] = [
    ["an agent more", start(), [...targets, agent("C", "web-3")]],
    ["an agent less", start(), targets.slice(1)],
    ["an agent renamed", start(), [agent("A", "web-1"), agent("B", "web-9")]],
    ["another argument", start({ argv: ["sh", "-c", "uptime -p"] }), targets],
    ["a script instead", start({ argv: [], script: "uptime\n" }), targets],
    ["the timeout", start({ timeoutSeconds: 60 }), targets],
    ["the batch", start({ batch: "1" }), targets],
    ["max_failures", start({ maxFailures: 0 }), targets],
  ];
  for (const [what, spec, resolved] of changed) t.not(frozenCommandRun(spec, resolved).hash, base.hash, what);
});

t.test("names that never run are not targets; a script carries its digest", async (t) => {
  const skip: Resolved = { kind: "skip", nodeId: "", name: "ghost", status: "not_found" };
  const spec = start({ selector: "", nodeIds: ["web-1", "ghost"], argv: [], script: "echo hi\n" });
  const f = frozenCommandRun(spec, [agent("A", "web-1"), skip]);
  t.same(f.content.targets, [{ node_id: "A", name: "web-1" }]);
  t.same(f.content.node_ids, ["web-1", "ghost"]);
  t.equal(f.content.command, null);
  t.equal(f.content.script, "echo hi\n");
  t.equal(f.content.script_sha256, "ab08508fdf5ca4da5c4995987bc41c56c048aaa5eeb046417ae4049b7d40286e");
});

t.test("the content gives back the run it froze (what the executor re-freezes)", async (t) => {
  for (const spec of [
    start({ batch: "25%", maxFailures: 2, timeoutSeconds: 30 }),
    start({ selector: "", nodeIds: ["web-1", "web-2"], argv: [], script: "#!/bin/sh\nid\n" }),
  ]) {
    const f = frozenCommandRun(spec, targets);
    // Through JSON, as the content crosses the bus and the auth service's database.
    const back = commandSpecOf(JSON.parse(JSON.stringify(f.content)) as Record<string, unknown>);
    t.equal(frozenCommandRun(back, targets).hash, f.hash);
    t.same(back.env, {});
  }
  t.throws(
    () => commandSpecOf({ command: [], script: "", selector: "*", timeout_s: 300 }),
    "a content without a command",
  );
});

t.test("the request's target name and summary", async (t) => {
  t.same(describeRun(start(), 2), { targetName: "sh", summary: "run `sh -c uptime` on 2 agents" });
  t.same(describeRun(start({ argv: [], script: "id\n" }), 1), {
    targetName: "script",
    summary: "run a script on 1 agent",
  });
  const long = describeRun(start({ argv: ["echo", "x".repeat(200)] }), 1).summary;
  t.ok(long.length < 100, "a long command line is shortened");
  t.match(long, /…` on 1 agent$/);
});

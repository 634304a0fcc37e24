import t from "tap";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { AgentStateService, ExecuteRequestSchema, type ResourceResult } from "@orch/contracts";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentHandlers } from "../src/runtime.js";
import { stateFeature } from "../src/state/feature.js";
import { sealedPathsFile } from "../src/state/sealed-paths.js";
import { scratch, stubRuntime } from "./state-harness.js";

// Files written from a secret, through the served Execute handler on real files: sealed for every
// later operation, also after the agent restarts (the set is in its data directory), and created
// 0600 unless the module gives a mode.

const SECRET = "sealed-S3cret value";
const dataDir = scratch(t, "orch-agent-data-");
const dir = scratch(t);

/** A fresh state feature on the same data directory: the agent after a restart. */
async function agent() {
  const { rt, served } = stubRuntime(dataDir);
  await stateFeature(rt);
  const handlers = served.get(AgentStateService.typeName) as AgentHandlers<typeof AgentStateService>;
  return async (mode: "plan" | "apply", type: string, spec: JsonObject, mask: string[] = []) => {
    const req = create(ExecuteRequestSchema, {
      mode,
      mask,
      resources: [{ id: "r", module: "m", type, spec, requires: [] }],
    });
    const res = await handlers.execute(req, { deadline: Date.now() + 60_000 });
    return (res.results ?? [])[0] as ResourceResult;
  };
}

t.test("a file written from a secret stays sealed for operations without it, across a restart", async (t) => {
  const p = join(dir, "app.conf");
  const first = await agent();
  const written = await first("apply", "file", { path: p, content: `user=app\npassword=${SECRET}\n` }, [SECRET]);
  t.equal(written.status, "changed", written.message);
  t.match(written.diff, /^# create file \(mode 0600\)\ncontent \(none\) -> 38 bytes \(not shown: /);
  t.equal(written.observed?.sealed, true);
  t.notOk("sha256" in (written.observed ?? {}), "no hash of it");
  t.same(JSON.parse(readFileSync(sealedPathsFile(dataDir), "utf8")), { version: 1, paths: [p] }, "kept on disk");
  t.equal(statSync(sealedPathsFile(dataDir)).mode & 0o777, 0o600);

  const restarted = await agent();
  for (const [type, spec] of [
    ["file", { path: p, content: "user=app\n" }],
    ["line", { path: p, line: "other=1" }],
    ["block", { path: p, content: "x" }],
  ] as const) {
    const plan = await restarted("plan", type, spec);
    t.equal(plan.status, "changed", type);
    t.notMatch(plan.diff, /password|user=app/, `${type}: no line of the file`);
    t.match(plan.diff, /content 38 bytes -> \d+ bytes \(not shown: the file holds content rendered from a secret\)/);
    t.equal(plan.observed?.sealed, true, `${type}: observed says sealed`);
  }

  // Rewritten whole without a secret, the file holds none: its diffs show content again.
  const replaced = await restarted("apply", "file", { path: p, content: "user=app\n" });
  t.match(replaced.diff, /not shown/, "the apply replacing it shows none of the old content");
  t.same(JSON.parse(readFileSync(sealedPathsFile(dataDir), "utf8")).paths, [], "unsealed");
  const after = await (await agent())("plan", "file", { path: p, content: "user=bob\n" });
  t.match(after.diff, /-user=app\n\+user=bob/);
});

t.test("a file given a secret by line or block is created 0600; an existing file keeps its mode", async (t) => {
  const run = await agent();
  const viaLine = join(dir, "line.conf");
  const viaBlock = join(dir, "block.conf");
  const plainLine = join(dir, "plain-line.conf");
  const existing = join(dir, "existing.conf");
  writeFileSync(existing, "a=1\n", { mode: 0o640 });
  for (const [type, p, spec, mask] of [
    ["line", viaLine, { line: `k=${SECRET}`, create: true }, [SECRET]],
    ["block", viaBlock, { content: `k=${SECRET}`, create: true }, [SECRET]],
    ["line", plainLine, { line: "k=v", create: true }, []],
    ["line", existing, { line: `k=${SECRET}` }, [SECRET]],
  ] as const) {
    const r = await run("apply", type, { path: p, ...spec }, [...mask]);
    t.equal(r.status, "changed", r.message);
  }
  t.equal(statSync(viaLine).mode & 0o777, 0o600, "line");
  t.equal(statSync(viaBlock).mode & 0o777, 0o600, "block");
  t.equal(statSync(plainLine).mode & 0o777, 0o644, "without a secret: 0644");
  t.equal(statSync(existing).mode & 0o777, 0o640, "an existing file's mode is the module's to manage");
});

t.test("an exec given a secret seals the file it creates", async (t) => {
  const run = await agent();
  const p = join(dir, "token");
  const made = await run(
    "apply",
    "exec",
    { script: `umask 077; printf '%s' "$TOKEN" > ${p}`, env: { TOKEN: SECRET }, creates: p },
    [SECRET],
  );
  t.equal(made.status, "changed", made.message);
  const plan = await (await agent())("plan", "file", { path: p, content: "x" });
  t.notMatch(plan.diff, /S3cret/);
  t.match(plan.diff, /not shown/);
});

import t from "tap";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "@orch/kit/testing";
import { agentInfo } from "../src/convert.js";
import { driftDb } from "../src/db/snapshots.js";
import { driftPass } from "../src/engine/drift.js";
import { enforce } from "../src/engine/enforce.js";
import { startStack } from "./harness.js";

// Enforcement end to end inside the state service: real NATS/Postgres, the real agent-side
// providers on files under a temp dir, scheduled drift passes called directly.
const s = await startStack(t, { state: { enforce_interval_seconds: 3600 } });
const dir = s.tempDir();
const engine = () => s.state.svc.engine;
const pass = () => driftPass(s.state.deps, engine().clients, engine().runner, engine().cache);
const path = (host: string, f: string) => join(dir, host, f);

// Each agent writes under its own directory (the hostname attribute); `counter` is an unguarded exec
// that appends a line whenever it runs, so a re-run would show.
const r = await s.api("POST", "/modules", {
  name: "conf",
  content: [
    "name: conf",
    "resources:",
    `  - { id: dir, type: directory, path: '${dir}/{{ attributes.hostname }}' }`,
    `  - { id: app, type: file, path: '${dir}/{{ attributes.hostname }}/app.conf', content: "managed\\n", requires: [dir] }`,
    `  - { id: other, type: file, path: '${dir}/{{ attributes.hostname }}/other.conf', content: "x\\n", requires: [dir] }`,
    `  - { id: counter, type: exec, command: 'echo run >> ${dir}/{{ attributes.hostname }}/runs.log', requires: [dir] }`,
    "",
  ].join("\n"),
});
if (r.status !== 201) throw new Error(r.text);
for (const [name, selector, enforced] of [
  ["enforced", "enforce=yes", true],
  ["reported", "enforce=no", false],
] as const) {
  const a = await s.api("POST", "/assignments", { name, selector, modules: ["conf"], enforce: enforced });
  if (a.status !== 201) throw new Error(a.text);
}

/** An agent with the module applied by a person (the snapshot); returns its id and first apply. */
async function appliedAgent(name: string, enforced: boolean) {
  const nodeId = await s.addAgent({ name, tags: { enforce: enforced ? "yes" : "no" } });
  const apply = await s.api("POST", `/agents/${nodeId}/apply?wait=30`, { modules: ["conf"] });
  if (apply.body.status !== "succeeded") throw new Error(JSON.stringify(apply.body));
  return { nodeId, applyId: apply.body.id as string };
}
const applies = async (nodeId: string) =>
  (await s.api("GET", `/agents/${nodeId}/state/operations?kind=apply&limit=500`)).body.operations as any[];
const snapshots = async (nodeId: string) =>
  (
    await s.state.deps.pool.query<{ module_sha256: string; operation_id: string }>(
      "SELECT module_sha256, operation_id FROM snapshots WHERE node_id = $1",
      [nodeId],
    )
  ).rows;

t.test("an enforced assignment's hand edit is corrected by the scheduled check, and only it", async (t) => {
  const { nodeId, applyId } = await appliedAgent("web-1", true);
  const before = await snapshots(nodeId);
  t.same(
    before.map((x) => x.operation_id),
    [applyId],
  );
  writeFileSync(path("web-1", "app.conf"), "hacked\n");

  t.ok((await pass()) >= 1);
  t.equal(readFileSync(path("web-1", "app.conf"), "utf8"), "managed\n", "restored without a person");
  t.equal(readFileSync(path("web-1", "runs.log"), "utf8"), "run\n", "the unguarded exec was not re-run");

  const [fix] = await applies(nodeId);
  t.not(fix.id, applyId);
  t.same(fix.actor, { id: "system:enforce", name: "enforce" });
  t.equal(fix.assignment, "enforced");
  t.equal(fix.status, "succeeded");
  const detail = (await s.api("GET", `/state/operations/${fix.id}`)).body;
  t.same(
    detail.results.map((x: any) => [x.id, x.status]),
    [["app", "changed"]],
    "only the drifted resource was applied (its requires edge to the in-sync dir dropped)",
  );
  const records = (await s.api("GET", `/agents/${nodeId}/drift?limit=10`)).body.records as any[];
  const found = records.find((d) => d.drifted)!;
  t.same(
    found.resources.map((x: any) => x.id),
    ["app"],
  );
  t.equal(fix.remediates, found.id, "the operation links the drift record it corrects");
  t.equal(records[0].drifted, false, "the remediation recorded the drift as gone");
  t.equal(records[0].operation_id, fix.id);

  t.same(await snapshots(nodeId), before, "the snapshot of the full module version stays");
  const believed = (await s.api("GET", `/agents/${nodeId}/state`)).body.resources as any[];
  t.equal(believed.find((b) => b.id === "app").operation_id, fix.id);
  t.equal(believed.find((b) => b.id === "other").operation_id, applyId, "the rest of the module is untouched");

  const remediated = await eventually(async () => {
    const ev = (await s.events("drift.remediated")).filter((e) => e.target?.id === nodeId);
    return ev.length ? ev : undefined;
  });
  t.equal(remediated.length, 1);
  t.equal(remediated[0]!.severity, "info");
  t.equal(remediated[0]!.actor?.id, "system:enforce");
  t.equal(remediated[0]!.actor?.type, "system");
  t.same(remediated[0]!.metadata, {
    drift_id: found.id,
    operation_id: fix.id,
    assignment: "enforced",
    node_id: nodeId,
    resources: ["conf/app"],
  });
  const cleared = (await s.events("drift.cleared")).filter((e) => e.target?.id === nodeId);
  t.equal(cleared.length, 1);
  t.equal(cleared[0]!.metadata?.operation_id, fix.id);

  t.test("a second drift within the interval is detected, not corrected", async (t) => {
    writeFileSync(path("web-1", "app.conf"), "hacked again\n");
    await pass();
    t.equal(readFileSync(path("web-1", "app.conf"), "utf8"), "hacked again\n");
    t.equal((await applies(nodeId)).length, 2, "no new apply");
    const latest = (await s.api("GET", `/agents/${nodeId}/drift/latest`)).body;
    t.equal(latest.drifted, true);
  });
});

t.test("drift on an agent of an assignment that does not enforce is only reported", async (t) => {
  const { nodeId } = await appliedAgent("db-1", false);
  writeFileSync(path("db-1", "app.conf"), "hacked\n");
  await pass();
  t.equal(readFileSync(path("db-1", "app.conf"), "utf8"), "hacked\n");
  t.equal((await applies(nodeId)).length, 1);
  t.equal((await s.api("GET", `/agents/${nodeId}/drift/latest`)).body.drifted, true);
});

t.test("inside a maintenance window drift is detected, never corrected", async (t) => {
  const { nodeId } = await appliedAgent("web-2", true);
  writeFileSync(path("web-2", "app.conf"), "hacked\n");
  s.maintenance.status.active = true;
  t.teardown(() => {
    s.maintenance.status.active = false;
  });
  t.equal(await pass(), -1, "scheduled checks pause");
  const manual = await s.api("POST", `/agents/${nodeId}/drift?wait=30`);
  t.equal(manual.body.drift.drifted, true, "a manual check detects");
  // A window opened between the scheduled check and the apply: asked again right before.
  const rec = (await driftDb.get(s.state.deps.pool, manual.body.drift.id))!;
  const agent = agentInfo(s.registry.agents.get(nodeId)!);
  const done = await enforce(s.state.deps, engine().clients, engine().runner, engine().cache, agent, rec);
  t.same(done, [{ assignment: "enforced", outcome: "maintenance" }]);
  t.equal(readFileSync(path("web-2", "app.conf"), "utf8"), "hacked\n");
  t.equal((await applies(nodeId)).length, 1);

  s.maintenance.status.active = false;
  await pass();
  t.equal(readFileSync(path("web-2", "app.conf"), "utf8"), "managed\n", "corrected once the window ended");
});

t.test("a remediation that fails emits drift.remediation_failed", async (t) => {
  const { nodeId } = await appliedAgent("web-3", true);
  // A directory where the file should be: the plan reports it (drift), the apply cannot fix it.
  rmSync(path("web-3", "app.conf"));
  mkdirSync(path("web-3", "app.conf"));
  await pass();
  const [fix] = await applies(nodeId);
  t.equal(fix.actor.id, "system:enforce");
  t.equal(fix.status, "failed");
  const failed = await eventually(async () => {
    const ev = (await s.events("drift.remediation_failed")).filter((e) => e.target?.id === nodeId);
    return ev.length ? ev : undefined;
  });
  t.equal(failed[0]!.severity, "error");
  t.equal(failed[0]!.metadata?.operation_id, fix.id);
  t.equal(failed[0]!.metadata?.drift_id, fix.remediates);
  t.same(failed[0]!.metadata?.resources, ["conf/app"]);
  t.equal((await s.api("GET", `/agents/${nodeId}/drift/latest`)).body.drifted, true, "the drift stays recorded");
  t.equal((await s.events("drift.remediated")).filter((e) => e.target?.id === nodeId).length, 0);
});

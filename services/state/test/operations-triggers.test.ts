import t from "tap";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startStack } from "./harness.js";

// onchanges/notify through the whole state service (upload, render, operation, results) with the
// real providers of agent/src/state: an agent that does not report the triggers feature gets
// nothing (agent_too_old), one that does runs the exec only after a change.
// (Restart-once against a real init script and a real orch-agent: service-refresh-sysv.test.ts.)
const s = await startStack(t);
const dir = s.tempDir();
const old = await s.addAgent({ name: "old-1" });
const current = await s.addAgent({ name: "new-1", attributes: { state_features: "triggers" } });

const site = (content: string) =>
  [
    "version: 2",
    "name: site",
    "resources:",
    `  - { id: conf, type: file, path: "${dir}/{{ attributes.hostname }}.conf", content: "${content}\\n", notify: build }`,
    `  - { id: build, type: exec, command: "echo built >> ${dir}/{{ attributes.hostname }}.builds" }`,
    "",
  ].join("\n");

const upload = async (content: string) => {
  const r = await s.api("POST", "/modules", { name: "site", content });
  if (r.status !== 201 && r.status !== 200) throw new Error(`upload: ${r.status} ${r.text}`);
};
const run = (node: string, kind: "apply" | "plan") =>
  s.api("POST", `/agents/${node}/${kind}?wait=30`, { modules: ["site"] });
const builds = (name: string) =>
  existsSync(join(dir, `${name}.builds`))
    ? readFileSync(join(dir, `${name}.builds`), "utf8").split("\n").length - 1
    : 0;

t.test("a version-1 module cannot use notify: 400 with the line", async (t) => {
  const r = await s.api("POST", "/modules", {
    name: "v1",
    content: "name: v1\nresources:\n  - { id: a, type: exec, command: x, notify: [a] }\n",
  });
  t.equal(r.status, 400);
  t.equal(r.body.code, "invalid_module");
  t.match(r.body.detail, /^resources\[0\]\.notify \(line 3\): notify needs version: 2/);
});

t.test("an agent without the triggers feature: the operation fails agent_too_old, nothing runs", async (t) => {
  await upload(site("v1"));
  const r = await run(old, "apply");
  t.equal(r.body.status, "failed");
  t.equal(r.body.error_code, "agent_too_old");
  t.match(r.body.error, /agent old-1 runs orch-agent .*does not support onchanges.*site\/build.*upgrade/);
  t.notOk(existsSync(join(dir, "old-1.conf")), "nothing was sent");
});

t.test("an agent with it: the notified exec runs after a change only, and the plan says so", async (t) => {
  const plan = await run(current, "plan");
  t.equal(plan.body.status, "succeeded");
  t.same(
    plan.body.results.map((r: any) => [r.id, r.status]),
    [
      ["conf", "changed"],
      ["build", "changed"],
    ],
  );
  const first = await run(current, "apply");
  t.equal(first.body.status, "succeeded");
  t.equal(builds("new-1"), 1);

  const again = await run(current, "apply");
  t.equal(again.body.status, "succeeded");
  const build = again.body.results.find((r: any) => r.id === "build");
  t.same([build.status, build.message], ["ok", "not run: none of site/conf changed"]);
  t.equal(builds("new-1"), 1, "not run again");

  await upload(site("v2"));
  const replan = await run(current, "plan");
  t.equal(replan.body.results.find((r: any) => r.id === "build").status, "changed");
  await run(current, "apply");
  t.equal(builds("new-1"), 2, "run once for the change");
});

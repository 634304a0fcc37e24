import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { create } from "@bufbuild/protobuf";
import { SourcePlanSchema } from "@orch/contracts";
import { OrchError } from "@orch/kit";
import { ADMIN } from "./harness.js";
import { startSourcesStack } from "./sources-sync-harness.js";

// Plan before merge: a branch of the source planned on the fleet with the tree's module versions,
// per-agent diffs, and nothing in the catalog or on the agents changed.
const x = await startSourcesStack(t);
const { s, sync } = x;
const rpc = s.stateRpc;
await s.addAgent({ name: "web-1", tags: { role: "web" } });
await s.addAgent({ name: "web-2", tags: { role: "web" } });
await s.addAgent({ name: "db-1", tags: { role: "db" } });

const repo = await x.repo("fleet");
const server = await x.server();
await x.addSource("fleet", server.url("fleet"));
const mark = (prefix: string, host: string) => {
  const f = join(x.marks, `${prefix}-${host}`);
  return existsSync(f) ? readFileSync(f, "utf8") : undefined;
};
const planOf = async (ref: string, waitMs = 60_000) =>
  create(SourcePlanSchema, await sync.plan("fleet", ref, waitMs, ADMIN));
const reason = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: unknown) => (e instanceof OrchError ? e.reason : String(e)),
  );

await repo.write("modules/web.yaml", x.module("web", "v1"));
await repo.write("modules/old.yaml", x.module("old", "o"));
await repo.write("assignments/web.yaml", x.assignment("role=web", ["web"]));
await repo.write("assignments/old.yaml", x.assignment("role=db", ["old"]));
await repo.write("assignments/same.yaml", x.assignment("role=db", ["web"], { description: "unchanged" }));
const main = await repo.commit("main");
await sync.sync("fleet", x.manual);
// The fleet is where main says: web applied on the web agents.
await rpc.runAssignment({ name: "web", kind: "apply", batch: "", waitSeconds: 60 }, { actor: ADMIN });

await repo.branch("feature");
await repo.write("modules/web.yaml", x.module("web", "v2"));
await repo.write("modules/db.yaml", x.module("db", "d1"));
await repo.write("assignments/db.yaml", x.assignment("role=db", ["db"]));
await repo.remove("assignments/old.yaml");
await repo.remove("modules/old.yaml");
const feature = await repo.commit("feature: web v2, db, drop old");
await repo.checkout("main");

t.test("a branch's plan: per-assignment changes and per-agent diffs, nothing changed", async (t) => {
  const moduleBefore = await rpc.getModule({ name: "web" }, { actor: ADMIN });
  const plan = await planOf("feature");
  t.match(plan, { source: "fleet", ref: "feature", commit: feature, currentCommit: main, complete: true });
  t.same(plan.errors, []);
  t.same(plan.modulesChanged, ["db", "web"]);
  t.same(plan.modulesRemoved, ["old"]);
  t.same(
    plan.assignments?.map((a) => [a.name, a.change]),
    [
      ["db", "created"],
      ["old", "removed"],
      ["same", "updated"],
      ["web", "updated"],
    ],
    "same's definition is unchanged but its module's content is not",
  );
  const by = Object.fromEntries((plan.assignments ?? []).map((a) => [a.name, a]));

  const web = by.web!;
  t.match(web.run, { kind: "plan", status: "completed", source: "fleet", commit: feature, actorId: ADMIN.id });
  t.same(
    web.operations?.map((o) => [o.nodeName, o.kind, o.status]),
    [
      ["web-1", "plan", "succeeded"],
      ["web-2", "plan", "succeeded"],
    ],
  );
  const result = web.operations?.[0]?.results?.[0];
  t.match(result, { module: "web", id: "mark", changed: true });
  t.match(result?.diff, /v2/, "the diff shows the branch's content");

  const db = by.db!;
  t.same(
    db.operations?.map((o) => [o.nodeName, o.status]),
    [["db-1", "succeeded"]],
  );
  t.match(db.operations?.[0]?.results?.[0], { module: "db", changed: true });
  t.notOk(by.old!.run, "a removed assignment is not planned");

  t.equal(mark("web", "web-1"), "v1", "agents untouched");
  t.equal(mark("db", "db-1"), undefined);
  const moduleAfter = await rpc.getModule({ name: "web" }, { actor: ADMIN });
  t.equal(moduleAfter.sha256, moduleBefore.sha256, "the catalog still holds main's version");
  t.equal(moduleAfter.commit, main);
  t.equal(await reason(rpc.getAssignment({ name: "db" }, { actor: ADMIN })), "assignment_not_found");
  t.equal((await rpc.getAssignment({ name: "old" }, { actor: ADMIN })).commit, main);
  const row = await x.row("fleet");
  t.same([row.commit, row.status], [main, "ok"]);
});

t.test("the current commit plans nothing; a SHA is a ref too", async (t) => {
  const plan = await planOf(main, 10_000);
  t.equal(plan.commit, main);
  t.same(plan.modulesChanged, []);
  t.ok(plan.assignments?.every((a) => a.change === "unchanged" && !a.run));
});

t.test("a branch with an invalid file: its errors, no runs", async (t) => {
  await repo.branch("broken");
  await repo.write("modules/web.yaml", "name: web\nresources:\n  - id: x\n    type: nope\n");
  const broken = await repo.commit("broken");
  await repo.checkout("main");
  const plan = await planOf("broken", 10_000);
  t.equal(plan.commit, broken);
  t.match(plan.errors, [{ file: "modules/web.yaml", code: "unknown_resource_type" }]);
  t.ok((plan.errors?.[0]?.line ?? 0) > 0);
  t.same(plan.assignments ?? [], []);
});

t.test("unknown refs and sources", async (t) => {
  t.equal(await reason(sync.plan("fleet", "no-such-branch", 1000, ADMIN)), "source_ref_not_found");
  t.equal(await reason(sync.plan("nope", "main", 1000, ADMIN)), "source_not_found");
});

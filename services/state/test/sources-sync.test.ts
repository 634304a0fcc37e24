import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import t from "tap";
import { OrchError, withJobLock } from "@orch/kit";
import { eventually } from "@orch/kit/testing";
import { ADMIN } from "./harness.js";
import { startSourcesStack } from "./sources-sync-harness.js";

// The sync of a git source on the real stack: real git over smart HTTP, real Postgres and NATS,
// real agent providers. Validate the whole tree, apply all or nothing, own what it made.
const x = await startSourcesStack(t);
const { s, sync, pool } = x;
const rpc = s.stateRpc;
await s.addAgent({ name: "web-1", tags: { role: "web" } });
await s.addAgent({ name: "web-2", tags: { role: "web" } });
await s.addAgent({ name: "db-1", tags: { role: "db" } });

const repo = await x.repo("fleet");
const server = await x.server();
await x.addSource("fleet", server.url("fleet"));

const getModule = (name: string) => rpc.getModule({ name }, { actor: ADMIN });
const getAssignment = (name: string) => rpc.getAssignment({ name }, { actor: ADMIN });
const reason = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: unknown) => (e instanceof OrchError ? e.reason : String(e)),
  );
const events = async (type: string, source = "fleet") =>
  (await s.events(type)).filter(
    (e) => e.actor?.id === `source:${source}` || (e.target?.type === "source" && e.target.name === source),
  );
const mark = (prefix: string, host: string) => {
  const f = join(x.marks, `${prefix}-${host}`);
  return existsSync(f) ? readFileSync(f, "utf8") : undefined;
};

t.test("the first sync creates the module and the assignment, owned by the source at its commit", async (t) => {
  await repo.write("modules/web.yaml", x.module("web", "v1"));
  await repo.write("assignments/web.yaml", x.assignment("role=web", ["web"], { description: "web hosts" }));
  const c1 = await repo.commit("web");

  t.same(await sync.sync("fleet", x.manual), { queued: false });
  const m = await getModule("web");
  t.equal(m.source, "fleet");
  t.equal(m.commit, c1);
  t.equal(m.uploadedBy, "source:fleet");
  t.notOk(m.removedFromSource);
  const a = await getAssignment("web");
  t.same([a.source, a.commit, a.selector, a.modules, a.description], ["fleet", c1, "role=web", ["web"], "web hosts"]);
  const row = await x.row("fleet");
  t.same([row.status, row.commit, row.failures, row.error], ["ok", c1, 0, ""]);
  t.equal(row.module_count, 1);
  t.equal(row.assignment_count, 1);
  t.ok(row.next_sync_at >= row.synced_at + 300_000, "next sync one interval later");

  const synced = await eventually(async () => (await events("source.synced")).find((e) => e.metadata?.commit === c1));
  t.match(synced.metadata, { previous_commit: "", created: 2, updated: 0, removed: 0, modules: 1, assignments: 1 });
  t.match(synced.summary, c1.slice(0, 7));
  const uploaded = (await events("module.uploaded")).find((e) => e.target?.name === "web");
  t.match(uploaded?.metadata, { replaced: false, source: "fleet", commit: c1 });
  t.match(uploaded?.actor, { id: "source:fleet", name: "source fleet", type: "system" });
  t.ok((await events("assignment.created")).some((e) => e.target?.name === "web"));

  t.same(await sync.sync("fleet", x.manual), { queued: false }, "a sync of the same commit");
  await s.state.deps.relay?.flush();
  t.equal((await events("source.synced")).length, 1, "changes nothing and reports nothing");
  t.equal((await events("module.uploaded")).length, 1);
});

t.test("a second commit updates; git revert brings the previous content back", async (t) => {
  const before = await getModule("web");
  await repo.write("modules/web.yaml", x.module("web", "v2"));
  const c2 = await repo.commit("web v2");
  await sync.sync("fleet", x.manual);
  const m2 = await rpc.getModule({ name: "web" }, { actor: ADMIN });
  t.not(m2.sha256, before.sha256);
  t.equal(m2.commit, c2);
  t.match(m2.content, /'v2'/);
  t.equal((await getAssignment("web")).commit, before.commit, "the unchanged assignment keeps the commit that made it");

  await repo.git("revert", "--no-edit", "HEAD");
  const c3 = await repo.git("rev-parse", "HEAD");
  await sync.sync("fleet", x.manual);
  const m3 = await getModule("web");
  t.equal(m3.sha256, before.sha256, "the reverted content is back");
  t.equal(m3.commit, c3);
  t.equal((await x.row("fleet")).commit, c3);
  const replaced = (await events("module.uploaded")).filter((e) => e.metadata?.replaced === true);
  t.same(
    replaced.map((e) => e.metadata?.commit),
    [c2, c3],
  );
});

t.test("apply_on_sync applies the assignment on its agents when it or its modules change", async (t) => {
  await repo.write("modules/site.yaml", x.module("site", "s1"));
  await repo.write("assignments/site.yaml", x.assignment("role=web", ["site"], { apply_on_sync: true, batch: 1 }));
  const c = await repo.commit("site, applied on sync");
  await sync.sync("fleet", x.manual);
  const runs = async () => (await rpc.listAssignmentRuns({ name: "site", limit: 50 }, { actor: ADMIN })).runs;
  const [run] = await runs();
  t.ok(run, "a run started");
  t.match(run, { kind: "apply", source: "fleet", commit: c, batchSize: 1, batches: 2, actorId: "source:fleet" });
  await s.state.svc.engine.fanout.drain();
  t.equal(mark("site", "web-1"), "s1");
  t.equal(mark("site", "web-2"), "s1");
  t.equal(mark("site", "db-1"), undefined, "the selector holds");
  t.equal(mark("web", "web-1"), undefined, "an assignment without apply_on_sync is not applied");
  const applied = (await s.events("assignment.applied")).find((e) => e.metadata?.run_id === run!.id);
  t.match(applied?.metadata, { source: "fleet", commit: c });

  await repo.write("README.md", "no change to the tree\n");
  await repo.commit("readme");
  await sync.sync("fleet", x.manual);
  t.equal((await runs()).length, 1, "a sync that changes neither it nor its modules does not apply");

  await repo.write("modules/site.yaml", x.module("site", "s2"));
  const c2 = await repo.commit("site s2");
  await sync.sync("fleet", x.manual);
  const after = await runs();
  t.equal(after.length, 2, "a module content change applies again");
  t.equal(after[0]!.commit, c2);
  await s.state.svc.engine.fanout.drain();
  t.equal(mark("site", "web-1"), "s2");
});

t.test("removing a file removes the assignment; a removed module in use stays until unused", async (t) => {
  await rpc.createAssignment({ name: "by-hand", selector: "role=db", modules: ["web"] }, { actor: ADMIN });
  await repo.remove("assignments/web.yaml");
  await repo.remove("modules/web.yaml");
  const c = await repo.commit("drop web");
  await sync.sync("fleet", x.manual);
  t.equal(await reason(getAssignment("web")), "assignment_not_found");
  const kept = await getModule("web");
  t.ok(kept.removedFromSource, "kept, marked: an assignment made through the API uses it");
  t.equal(kept.source, "fleet");
  const synced = await eventually(async () => (await events("source.synced")).find((e) => e.metadata?.commit === c));
  t.match(synced.metadata, { removed: 2, kept_in_use: ["web"] });
  t.ok((await events("assignment.deleted")).some((e) => e.target?.name === "web"));

  await rpc.deleteAssignment({ name: "by-hand" }, { actor: ADMIN });
  await sync.sync("fleet", x.manual);
  t.equal(await reason(getModule("web")), "module_not_found", "a later sync deletes it once unused");
  t.ok((await events("module.deleted")).some((e) => e.target?.name === "web"));
});

t.test("one invalid file among 20: nothing changes, the error names the file and line", async (t) => {
  const before = await x.row("fleet");
  const site = await getModule("site");
  for (let i = 0; i < 10; i++) await repo.write(`modules/m${i}.yaml`, x.module(`m${i}`, `c${i}`));
  for (let i = 0; i < 9; i++) await repo.write(`assignments/a${i}.yaml`, x.assignment("role=db", [`m${i}`]));
  await repo.write("assignments/a9.yaml", "selector: 'role=db'\nmodules:\n  - m9\n  bad: [\n");
  const bad = await repo.commit("twenty files, one broken");

  t.same(await sync.sync("fleet", x.manual), { queued: false }, "a failed sync is recorded, not thrown");
  const row = await x.row("fleet");
  t.equal(row.status, "error");
  t.equal(row.commit, before.commit, "the previous commit stays in force");
  t.equal(row.attempted_commit, bad);
  t.equal(row.errors.length, 1);
  t.match(row.errors[0], { file: "assignments/a9.yaml" });
  t.ok(row.errors[0]!.line >= 3, `a line is named (${row.errors[0]!.line})`);
  t.match(row.error, /^assignments\/a9\.yaml:\d+: /);
  t.equal(await reason(getModule("m0")), "module_not_found", "no file of the tree was applied");
  t.equal(await reason(getAssignment("a0")), "assignment_not_found");
  t.equal((await getModule("site")).sha256, site.sha256, "what was in force stays");

  const failed = await eventually(async () =>
    (await events("source.sync_failed")).find((e) => e.metadata?.commit === bad),
  );
  t.match(failed.metadata, { reason: "invalid_tree", file: "assignments/a9.yaml", current_commit: before.commit });
  t.equal(failed.metadata?.line, row.errors[0]!.line);
  t.equal(failed.severity, "error");

  await sync.sync("fleet", x.manual);
  await s.state.deps.relay?.flush();
  t.equal(
    (await events("source.sync_failed")).filter((e) => e.metadata?.commit === bad).length,
    1,
    "the same failure again is not reported again",
  );
  t.equal((await x.row("fleet")).failures, 2);

  await repo.write("assignments/a9.yaml", x.assignment("role=db", ["m9"]));
  const fixed = await repo.commit("fix");
  await sync.sync("fleet", x.manual);
  const ok = await x.row("fleet");
  t.same([ok.status, ok.commit, ok.failures, ok.errors], ["ok", fixed, 0, []]);
  t.equal((await getAssignment("a9")).commit, fixed);
  t.equal((await getModule("m0")).source, "fleet");
});

t.test("an object that exists outside the source is not taken over", async (t) => {
  await rpc.uploadModule({ name: "hand-made", content: x.module("hand-made", "h") }, { actor: ADMIN });
  const before = await x.row("fleet");
  await repo.write("modules/hand-made.yaml", x.module("hand-made", "from git"));
  const c = await repo.commit("claims hand-made");
  await sync.sync("fleet", x.manual);
  const row = await x.row("fleet");
  t.equal(row.status, "error");
  t.equal(row.commit, before.commit);
  t.match(row.errors, [{ file: "modules/hand-made.yaml", line: 1, code: "managed_by_source" }]);
  const m = await getModule("hand-made");
  t.equal(m.source, "");
  t.match(m.content, /'h'/);
  t.equal(row.attempted_commit, c);
  await repo.remove("modules/hand-made.yaml");
  await repo.commit("give it back");
  await sync.sync("fleet", x.manual);
  t.equal((await x.row("fleet")).status, "ok");
});

t.test("a force-push that rewrites history syncs to the new head", async (t) => {
  const old = (await x.row("fleet")).commit;
  await repo.write("modules/site.yaml", x.module("site", "rewritten"));
  await repo.git("commit", "-q", "-a", "--amend", "-m", "rewritten history");
  const head = await repo.git("rev-parse", "HEAD");
  t.not(head, old);
  t.equal(await repo.git("merge-base", "--is-ancestor", old, head).catch(() => "not an ancestor"), "not an ancestor");
  await sync.sync("fleet", x.manual);
  t.equal((await x.row("fleet")).commit, head);
  t.equal((await getModule("site")).commit, head);
});

t.test("two syncs at once: one runs, the other is queued and kept due", async (t) => {
  await repo.write("modules/m0.yaml", x.module("m0", "concurrent"));
  const c = await repo.commit("concurrent");
  const results = await Promise.all([sync.sync("fleet", x.manual), sync.sync("fleet", x.manual)]);
  t.same(results.map((r) => r.queued).sort(), [false, true]);
  t.equal((await x.row("fleet")).commit, c);

  // Another replica holding the source's lock: this one queues.
  let inner: { queued: boolean } | undefined;
  await withJobLock(pool, "source:fleet", async () => {
    inner = await sync.sync("fleet", x.manual);
  });
  t.same(inner, { queued: true });
  t.ok((await x.row("fleet")).next_sync_at <= Date.now(), "and makes it due");
  t.equal(await sync.syncDue(), 1, "the next tick runs it");
  t.ok((await x.row("fleet")).next_sync_at > Date.now() + 200_000, "then it waits an interval");
  t.equal(await reason(sync.sync("nope", x.manual)), "source_not_found");
});

t.test("an unreachable repository: status error, retried with backoff, nothing removed", async (t) => {
  const other = await x.repo("other");
  await other.write("modules/lonely.yaml", x.module("lonely", "l"));
  const c = await other.commit("lonely");
  const srv = await x.server();
  await x.addSource("other", srv.url("other"));
  await sync.sync("other", x.manual);
  t.equal((await getModule("lonely")).commit, c);
  await srv.close();

  await sync.sync("other", x.manual);
  const r1 = await x.row("other");
  t.same([r1.status, r1.commit, r1.failures], ["error", c, 1]);
  t.match(r1.error, /unreachable/);
  t.equal(r1.next_sync_at - r1.attempted_at, 5_000, "first retry after 5 s");
  await sync.sync("other", x.manual);
  const r2 = await x.row("other");
  t.equal(r2.failures, 2);
  t.equal(r2.next_sync_at - r2.attempted_at, 10_000, "then 10 s");
  t.equal((await getModule("lonely")).source, "other", "nothing removed");

  await pool.query("UPDATE sources SET next_sync_at = 0 WHERE name = 'other'");
  t.equal(await sync.syncDue(), 1, "a due source is retried by the tick");
  t.equal((await x.row("other")).failures, 3);
  await s.state.deps.relay?.flush();
  const failed = (await events("source.sync_failed", "other")).filter((e) => e.metadata?.reason === "unreachable");
  t.equal(failed.length, 1, "reported once, not on every retry");
  t.match(failed[0]?.metadata, { commit: "", current_commit: c });
});

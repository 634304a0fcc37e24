import t from "tap";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "@orch/kit/testing";
import { driftPass } from "../src/engine/drift.js";
import { startStack } from "./harness.js";

// Drift against the stored snapshot: manual checks, scheduled checks (paused during a maintenance
// window), drift.detected / drift.cleared, and the drift history.
const s = await startStack(t, { state: { drift_interval_seconds: 1 }, maintenance: true });
const dir = s.tempDir();
const web = await s.addAgent({ name: "web-1", tags: { env: "test" } });
const r = await s.api("POST", "/modules", {
  name: "conf",
  content: [
    "name: conf",
    "resources:",
    `  - { id: dir, type: directory, path: '${dir}/etc' }`,
    `  - { id: app, type: file, path: '${dir}/etc/app.conf', content: "env={{ tags.env }}\\n", requires: [dir] }`,
    `  - { id: other, type: file, path: '${dir}/etc/other.conf', content: "x\\n", requires: [dir] }`,
    "  - { id: hello, type: exec, command: 'echo hi' }",
    "",
  ].join("\n"),
});
if (r.status !== 201) throw new Error(r.text);

const drift = () => s.api("POST", `/agents/${web}/drift?wait=30`);

t.test("no snapshot before the first successful apply", async (t) => {
  const r = await s.api("POST", `/agents/${web}/drift`);
  t.equal(r.status, 409);
  t.equal(r.body.code, "no_snapshot");
  t.equal((await s.api("GET", `/agents/${web}/drift/latest`)).status, 404);
});

t.test("a hand edit is reported as exactly that resource; re-apply clears it", async (t) => {
  t.equal((await s.api("POST", `/agents/${web}/apply?wait=30`, { modules: ["conf"] })).body.status, "succeeded");
  // An operator retags the agent after the apply.
  s.registry.agents.get(web)!.tags = { env: "prod" };

  const clean = await drift();
  t.equal(clean.status, 200);
  t.equal(clean.body.operation.kind, "drift");
  t.equal(
    clean.body.drift.drifted,
    false,
    "a changed tag does not drift: the snapshot keeps the values it applied; an unguarded exec holds no state",
  );

  writeFileSync(join(dir, "etc/app.conf"), "env=hacked\n");
  const found = await drift();
  t.equal(found.body.drift.drifted, true);
  t.same(
    found.body.drift.resources.map((x: any) => `${x.module}/${x.id}`),
    ["conf/app"],
    "exactly the edited resource",
  );
  t.match(found.body.drift.resources[0].diff, /^-env=hacked$/m);
  t.match(found.body.drift.resources[0].diff, /^\+env=test$/m);
  const detected = await eventually(async () => (await s.events("drift.detected")).filter((e) => e.target?.id === web));
  t.equal(detected.length, 1);
  t.equal(detected[0]!.severity, "warning");
  t.same(detected[0]!.metadata?.resources, ["conf/app"]);

  const again = await drift();
  t.equal(again.body.drift.drifted, true);
  t.equal(
    (await s.events("drift.detected")).filter((e) => e.target?.id === web).length,
    1,
    "unchanged drift is not reported twice",
  );

  t.test("scheduled checks pause in a maintenance window and find drift once it ends", async (t) => {
    const before = (await s.api("GET", `/agents/${web}/state/operations?kind=drift&limit=500`)).body.operations.length;
    t.equal(
      await driftPass(s.state.deps, s.state.svc.engine.clients, s.state.svc.engine.runner, s.state.svc.engine.cache),
      -1,
      "paused",
    );
    t.equal(
      (await s.api("GET", `/agents/${web}/state/operations?kind=drift&limit=500`)).body.operations.length,
      before,
      "no check ran",
    );

    s.maintenance.status.active = false;
    const scheduled = await eventually(async () => {
      const ops = (await s.api("GET", `/agents/${web}/state/operations?kind=drift&status=succeeded&limit=500`)).body
        .operations;
      return ops.find((o: any) => o.actor.id === "system");
    }, 20_000);
    const rec = (await s.api("GET", `/agents/${web}/drift?limit=500`)).body.records.find(
      (d: any) => d.operation_id === scheduled.id,
    );
    t.equal(rec.drifted, true, "the scheduled check found the edit");
    t.same(
      rec.resources.map((x: any) => x.id),
      ["app"],
    );
    s.maintenance.status.active = true;
  });

  t.test("re-apply fixes the file and emits drift.cleared", async (t) => {
    const apply = await s.api("POST", `/agents/${web}/apply?wait=30`, { modules: ["conf"] });
    t.equal(apply.body.status, "succeeded");
    const resource = apply.body.results.find((x: any) => x.id === "app");
    t.equal(resource.status, "changed");
    t.equal(readFileSync(join(dir, "etc/app.conf"), "utf8"), "env=prod\n", "a new apply renders the current tags");
    const latest = await s.api("GET", `/agents/${web}/drift/latest`);
    t.equal(latest.body.drifted, false);
    t.equal(latest.body.operation_id, apply.body.id, "recorded by the apply itself");
    const cleared = await eventually(async () => (await s.events("drift.cleared")).filter((e) => e.target?.id === web));
    t.equal(cleared.length, 1);
    t.equal(cleared[0]!.metadata?.operation_id, apply.body.id);
  });
});

t.test("drift history: newest first, paginated, one by id", async (t) => {
  const p1 = await s.api("GET", `/agents/${web}/drift?limit=2`);
  t.equal(p1.status, 200);
  t.equal(p1.body.records.length, 2);
  t.equal(p1.body.has_more, true);
  t.ok(p1.body.records[0].id > p1.body.records[1].id);
  const p2 = await s.api("GET", `/agents/${web}/drift?limit=2&cursor=${p1.body.next_cursor}`);
  t.ok(p2.body.records[0].id < p1.body.records[1].id);
  const one = await s.api("GET", `/drift/${p1.body.records[1].id}`);
  t.same(one.body, p1.body.records[1]);
  t.equal((await s.api("GET", `/drift/01ARZ3NDEKTSV4RRFFQ69G5FAV`)).body.code, "drift_not_found");
  t.equal((await s.api("GET", `/drift/not-a-ulid`)).status, 400);
});

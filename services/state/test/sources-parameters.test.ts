import t from "tap";
import { eventually } from "@orch/kit/testing";
import { ADMIN } from "./harness.js";
import { startSourcesStack } from "./sources-sync-harness.js";

// Parameters through a git source on the real stack (real git over smart HTTP, Postgres, NATS):
// an assignment file's parameters are stored, refused with the file's line when they do not suit
// the modules, a change of parameters alone updates the assignment, and a module change that would
// break an assignment made through the API refuses the sync, as the same upload would be refused.
const x = await startSourcesStack(t);
const { s, sync } = x;
const rpc = s.stateRpc;
const repo = await x.repo("sites");
const server = await x.server();
await x.addSource("sites", server.url("sites"));

const webapp = (extra: string[] = []) =>
  [
    "version: 2",
    "name: webapp",
    "parameters:",
    "  site_name: { type: string, required: true }",
    "  port: { type: integer, default: 8080 }",
    ...extra,
    "resources:",
    `  - { id: conf, type: file, path: '${x.marks}/{{ parameters.site_name }}.conf', content: x }`,
    "",
  ].join("\n");
const site = (params: string[]) => ["selector: role=web", "modules: [webapp]", ...params, ""].join("\n");
const getAssignment = (name: string) => rpc.getAssignment({ name }, { actor: ADMIN });

t.test("an assignment file's parameters are stored with it", async (t) => {
  await repo.write("modules/webapp.yaml", webapp());
  await repo.write("assignments/site-a.yaml", site(["parameters:", "  site_name: a.example", "  port: 81"]));
  const c1 = await repo.commit("site a");
  await sync.sync("sites", x.manual);
  const row = await x.row("sites");
  t.same([row.status, row.commit, row.errors], ["ok", c1, []]);
  t.same((await getAssignment("site-a")).parameters, { site_name: "a.example", port: 81 });
});

t.test("bad parameters in a file fail the sync with their line; nothing changes", async (t) => {
  await repo.write("assignments/site-a.yaml", site(["parameters:", "  site_name: a.example", "  port: eighty"]));
  await repo.write("assignments/site-b.yaml", site(["parameters: { port: 82 }"]));
  const bad = await repo.commit("bad parameters");
  await sync.sync("sites", x.manual);
  const row = await x.row("sites");
  t.equal(row.status, "error");
  t.equal(row.attempted_commit, bad);
  t.match(row.errors, [
    { file: "assignments/site-a.yaml", line: 5, code: "invalid_parameter", message: /'port' must be an integer/ },
    { file: "assignments/site-b.yaml", line: 3, code: "missing_parameter", message: /requires parameter 'site_name'/ },
  ]);
  t.same((await getAssignment("site-a")).parameters, { site_name: "a.example", port: 81 }, "unchanged");
});

t.test("a change of parameters alone updates the assignment", async (t) => {
  await repo.write("assignments/site-a.yaml", site(["parameters:", "  site_name: a.example", "  port: 83"]));
  await repo.remove("assignments/site-b.yaml");
  await repo.commit("port 83");
  await sync.sync("sites", x.manual);
  t.equal((await x.row("sites")).status, "ok");
  t.same((await getAssignment("site-a")).parameters, { site_name: "a.example", port: 83 });
  const ev = await eventually(async () =>
    (await s.events("assignment.updated")).find((e) => e.target?.name === "site-a"),
  );
  t.same(ev.metadata?.parameters_changed, ["port"]);
});

t.test("a module change that would break an API-made assignment refuses the sync", async (t) => {
  await rpc.createAssignment(
    {
      name: "by-hand",
      selector: "role=db",
      modules: ["webapp"],
      parameters: { site_name: "hand.example" },
    },
    { actor: ADMIN },
  );
  await repo.write("modules/webapp.yaml", webapp(["  tls_cert: { type: string, required: true }"]));
  await repo.write(
    "assignments/site-a.yaml",
    site(["parameters:", "  site_name: a.example", "  tls_cert: /etc/a.pem"]),
  );
  const breaking = await repo.commit("require tls_cert");
  await sync.sync("sites", x.manual);
  const row = await x.row("sites");
  t.equal(row.status, "error");
  t.equal(row.attempted_commit, breaking);
  t.match(row.errors, [
    {
      file: "modules/webapp.yaml",
      code: "module_breaks_assignments",
      message: /assignment 'by-hand' invalid \(module webapp requires parameter 'tls_cert'/,
    },
  ]);
  t.equal(row.errors.length, 1, "the tree's own assignment gives it");
});

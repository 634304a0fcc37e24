import t from "tap";
import { eventually } from "@orch/kit/testing";
import { startStack } from "./harness.js";

// Modules and assignments through the gateway: validation with YAML lines, replacement, paging,
// in-use protection, selectors with positions, and the audit events of each change.
const s = await startStack(t);

const motd = (name = "web-base", content = "hello") =>
  [
    `name: ${name}`,
    "description: base",
    "resources:",
    "  - id: motd",
    "    type: file",
    "    path: /tmp/orch-never-applied/motd",
    `    content: "${content}"`,
    "",
  ].join("\n");
const count = async (table: string) =>
  Number((await s.state.deps.pool.query(`SELECT count(*) FROM ${table}`)).rows[0].count);

t.test("upload, get with content, replace, list with pages", async (t) => {
  const up = await s.api("POST", "/modules", { name: "web-base", content: motd() });
  t.equal(up.status, 201);
  t.equal(up.body.name, "web-base");
  t.type(up.body.uploaded_at, "number");
  t.ok(Math.abs(up.body.uploaded_at - Date.now() / 1000) < 60, "uploaded_at is Unix seconds");
  t.type(up.body.uploaded_by, "string");
  t.equal(up.body.resource_count, 1);

  const got = await s.api("GET", "/modules/web-base");
  t.equal(got.status, 200);
  t.equal(got.body.content, motd());

  const again = await s.api("POST", "/modules", { name: "web-base", content: motd("web-base", "changed") });
  t.equal(again.status, 201, "re-uploading replaces");
  t.not(again.body.sha256, up.body.sha256);
  t.match((await s.api("GET", "/modules/web-base")).body.content, /changed/);

  for (const n of ["a-mod", "b-mod", "c-mod"])
    t.equal((await s.api("POST", "/modules", { name: n, content: motd(n) })).status, 201);
  const p1 = await s.api("GET", "/modules?limit=2");
  t.same(
    p1.body.modules.map((m: any) => m.name),
    ["a-mod", "b-mod"],
  );
  t.equal(p1.body.has_more, true);
  t.notOk("content" in p1.body.modules[0], "lists carry no content");
  const p2 = await s.api("GET", `/modules?limit=2&cursor=${p1.body.next_cursor}`);
  t.same(
    p2.body.modules.map((m: any) => m.name),
    ["c-mod", "web-base"],
  );
  t.equal(p2.body.has_more, false);
  t.equal(p2.body.next_cursor, null);

  await eventually(
    async () => (await s.events("module.uploaded")).filter((e) => e.target?.name === "web-base").length === 2,
  );
  const evs = (await s.events("module.uploaded")).filter((e) => e.target?.name === "web-base");
  t.same(
    evs.map((e) => e.metadata?.replaced),
    [false, true],
  );
});

t.test("every invalid module is a 400 naming the problem and its line, and stores nothing", async (t) => {
  const before = await count("modules");
  const cases: Array<[string, string, string, number]> = [
    ["bad YAML", "name: x\nresources:\n  - id: a\n   type: file\n", "invalid_yaml", 4],
    ["name mismatch", "name: other\nresources: []\n", "name_mismatch", 1],
    ["unknown type", "name: m\nresources:\n  - id: a\n    type: registry\n", "unknown_resource_type", 4],
    [
      "duplicate ids",
      "name: m\nresources:\n  - { id: a, type: file, path: /a }\n  - { id: a, type: file, path: /b }\n",
      "duplicate_resource_id",
      4,
    ],
    [
      "cyclic requires",
      "name: m\nresources:\n  - { id: a, type: file, path: /a, requires: [b] }\n  - { id: b, type: file, path: /b, requires: [a] }\n",
      "cyclic_requires",
      3,
    ],
    [
      "unknown requires",
      "name: m\nresources:\n  - { id: a, type: file, path: /a, requires: [zz] }\n",
      "unknown_requirement",
      3,
    ],
    [
      "unknown field",
      "name: m\nresources:\n  - id: a\n    type: file\n    path: /a\n    owner: root\n    conent: x\n",
      "invalid_module",
      7,
    ],
  ];
  for (const [what, content, code, line] of cases) {
    const r = await s.api("POST", "/modules", { name: "m", content });
    t.equal(r.status, 400, what);
    t.match(r.type, /problem\+json/);
    t.equal(r.body.code, code, `${what}: ${code}`);
    t.equal(r.body.line, line, `${what}: line ${line}`);
    t.match(r.body.detail, new RegExp(`line ${line}`));
  }
  const big = await s.api("POST", "/modules", {
    name: "m",
    content: `name: m\nresources: []\n# ${"x".repeat(300 * 1024)}\n`,
  });
  t.equal(big.status, 400);
  t.equal(big.body.code, "module_too_large");
  const badName = await s.api("POST", "/modules", { name: "Bad Name", content: motd() });
  t.equal(badName.body.code, "invalid_request");
  t.equal(await count("modules"), before, "nothing stored");
});

t.test("assignments: create, duplicate, selector errors with position, unknown modules, list, delete", async (t) => {
  const created = await s.api("POST", "/assignments", {
    name: "web",
    selector: "env=test,role in (web,db)",
    modules: ["web-base"],
    description: "web nodes",
  });
  t.equal(created.status, 201);
  t.same(created.body, {
    name: "web",
    selector: "env=test,role in (web,db)",
    modules: ["web-base"],
    description: "web nodes",
    created_at: created.body.created_at,
    created_by: created.body.created_by,
    enforce: false,
    // Made here, not synced from git: no source, no sync settings.
    source: null,
    commit: null,
    apply_on_sync: false,
    sync_batch: null,
    sync_max_failures: null,
    parameters: {},
  });
  t.match(created.body.created_at, /^\d{4}-\d\d-\d\dT/);

  const dup = await s.api("POST", "/assignments", { name: "web", selector: "*", modules: ["web-base"] });
  t.equal(dup.status, 409);
  t.equal(dup.body.code, "assignment_exists");

  const badSel = await s.api("POST", "/assignments", {
    name: "bad",
    selector: "env=test,role in web",
    modules: ["web-base"],
  });
  t.equal(badSel.status, 400);
  t.equal(badSel.body.code, "invalid_selector");
  t.equal(badSel.body.position, 17);
  t.match(badSel.body.detail, /position 17/);

  const noMod = await s.api("POST", "/assignments", { name: "ghost", selector: "*", modules: ["web-base", "nope"] });
  t.equal(noMod.status, 404);
  t.equal(noMod.body.code, "module_not_found");
  t.equal(noMod.body.module, "nope");
  t.equal((await s.api("GET", "/assignments/ghost")).status, 404, "nothing was created");

  t.equal(
    (await s.api("POST", "/assignments", { name: "all", selector: "*", modules: ["a-mod", "b-mod"] })).status,
    201,
  );
  const list = await s.api("GET", "/assignments?limit=1");
  t.same(
    list.body.assignments.map((a: any) => a.name),
    ["all"],
  );
  t.equal(list.body.has_more, true);
  t.equal((await s.api("GET", "/assignments/web")).body.description, "web nodes");
  t.equal((await s.api("GET", "/assignments/all")).body.description, null);

  const inUse = await s.api("DELETE", "/modules/web-base");
  t.equal(inUse.status, 409);
  t.equal(inUse.body.code, "module_in_use");
  t.same(inUse.body.assignments, ["web"]);
  t.equal((await s.api("GET", "/modules/web-base")).status, 200, "still there");

  t.equal((await s.api("DELETE", "/assignments/web")).status, 204);
  t.equal((await s.api("DELETE", "/assignments/web")).status, 404);
  t.equal((await s.api("DELETE", "/modules/web-base")).status, 204, "deletable once no assignment uses it");
  t.equal((await s.api("GET", "/modules/web-base")).body.code, "module_not_found");

  await eventually(async () => (await s.events("assignment.deleted")).some((e) => e.target?.name === "web"));
  t.ok(
    (await s.events("assignment.created")).some(
      (e) => e.target?.name === "web" && e.metadata?.selector === "env=test,role in (web,db)",
    ),
  );
  t.ok((await s.events("module.deleted")).some((e) => e.target?.name === "web-base"));
});

t.test("fan-out input is validated before anything starts", async (t) => {
  const before = await count("runs");
  const bad = await s.api("POST", "/assignments/all/apply", { batch: "0%" });
  t.equal(bad.status, 400);
  t.equal(bad.body.code, "invalid_request");
  const neg = await s.api("POST", "/assignments/all/apply", { max_failures: -1 });
  t.equal(neg.status, 400);
  const missing = await s.api("POST", "/assignments/nope/plan");
  t.equal(missing.status, 404);
  t.equal(missing.body.code, "assignment_not_found");
  t.equal(await count("runs"), before);
});

import t from "tap";
import type { AssignmentRow } from "../src/db/catalog.js";
import type { SourceFileErrorRow } from "../src/db/sources.js";
import { diffTree } from "../src/sources/diff.js";
import type { TreeFile } from "../src/sources/git.js";
import { checkTreeParameters } from "../src/sources/tree-parameters.js";
import { parseTree } from "../src/sources/tree.js";

// A git source's assignment files with `parameters:`: checked against the declarations of the
// tree's modules and of catalog modules, with the API's codes at the parameter's own line.

const file = (path: string, content: string): TreeFile => ({ path, content, bytes: Buffer.byteLength(content) });
const webapp = file(
  "modules/webapp.yaml",
  [
    "version: 2",
    "name: webapp",
    "parameters:",
    "  site_name: { type: string, required: true }",
    "  port: { type: integer, default: 8080 }",
    "resources:",
    "  - { id: conf, type: file, path: '/etc/{{ parameters.site_name }}.conf', content: x }",
    "",
  ].join("\n"),
);
const asg = (name: string, lines: string[]) =>
  file(`assignments/${name}.yaml`, ["selector: role=web", ...lines, ""].join("\n"));
const where = (errors: SourceFileErrorRow[]) =>
  errors.map(({ file, line, column, code }) => ({ file, line, column, code }));
/** A catalog module outside the source: `ntp`, declaring `server`. */
const outside = new Map([
  ["ntp", { name: "ntp", parameters: { server: { type: "string" as const, required: false, description: "" } } }],
]);

const read = (files: TreeFile[]) => {
  const tree = parseTree(files, new Set(["ntp"]));
  checkTreeParameters(tree, outside);
  return tree;
};

t.test("unit: valid parameters are read with the assignment; none given is no field", async (t) => {
  const tree = read([
    webapp,
    asg("site", ["modules: [webapp, ntp]", "parameters:", "  site_name: a.example", "  port: 81", "  server: pool"]),
    asg("plain", ["modules: [ntp]"]),
  ]);
  t.same(tree.errors, []);
  const site = tree.assignments.find((a) => a.name === "site")!;
  t.same(site.parameters, { site_name: "a.example", port: 81, server: "pool" });
  t.same(site.parameterLines, {
    "": { line: 3, column: 1 },
    site_name: { line: 4, column: 3 },
    port: { line: 5, column: 3 },
    server: { line: 6, column: 3 },
  });
  const plain = tree.assignments.find((a) => a.name === "plain")!;
  t.notOk("parameters" in plain);
});

t.test("unit: bad parameters in assignment files are errors at their lines", async (t) => {
  const tree = read([
    webapp,
    asg("unknown", ["modules: [webapp]", "parameters:", "  site_name: a", "  prot: 80"]),
    asg("missing", ["modules: [webapp]", "parameters: { port: 80 }"]),
    asg("absent", ["modules: [webapp]"]),
    asg("typed", ["modules: [webapp, ntp]", "parameters:", "  site_name: a", "  server: 123"]),
    asg("notmap", ["modules: [webapp]", "parameters: [site_name]"]),
  ]);
  t.same(where(tree.errors), [
    { file: "assignments/absent.yaml", line: 0, column: 0, code: "missing_parameter" },
    { file: "assignments/missing.yaml", line: 3, column: 1, code: "missing_parameter" },
    { file: "assignments/notmap.yaml", line: 3, column: 13, code: "invalid_request" },
    { file: "assignments/typed.yaml", line: 5, column: 3, code: "invalid_parameter" },
    { file: "assignments/unknown.yaml", line: 5, column: 3, code: "unknown_parameter" },
  ]);
  t.match(tree.errors.find((e) => e.code === "invalid_parameter")!.message, /'server' must be a string .*module ntp/);
  t.match(tree.errors.find((e) => e.code === "unknown_parameter")!.message, /'prot' is declared by none/);
});

t.test("unit: an assignment using a broken module file is not checked again", async (t) => {
  const broken = file(
    "modules/webapp.yaml",
    "version: 2\nname: webapp\nparameters: { p: { type: nope } }\nresources: []\n",
  );
  const tree = read([broken, asg("site", ["modules: [webapp]", "parameters: { q: 1 }"])]);
  t.same(
    tree.errors.map((e) => e.code),
    ["invalid_module"],
  );
});

t.test("unit: a sync sees a change of parameters alone as an update", async (t) => {
  const tree = read([webapp, asg("site", ["modules: [webapp]", "parameters: { site_name: b.example }"])]);
  const row: AssignmentRow = {
    name: "site",
    selector: "role=web",
    modules: ["webapp"],
    description: null,
    created_at: 1,
    created_by: "x",
    enforce: false,
    source: "git1",
    source_commit: "c1",
    apply_on_sync: false,
    sync_batch: "",
    sync_max_failures: null,
    parameters: { site_name: "a.example" },
  };
  const mod = { name: "webapp", source: "git1", sha256: tree.modules[0]!.sha256, removed_from_source: false };
  const modules = [mod as Parameters<typeof diffTree>[2][number]];
  const d = diffTree("git1", tree, modules, [row]);
  t.same(
    d.assignments.updated.map((u) => u.next.name),
    ["site"],
  );
  const same = diffTree("git1", tree, modules, [{ ...row, parameters: { site_name: "b.example" } }]);
  t.same(
    same.assignments.unchanged.map((a) => a.name),
    ["site"],
  );
});

import { createHash } from "node:crypto";
import t from "tap";
import type { OrchError } from "@orch/kit";
import { SOURCE_MAX_FILES } from "@orch/contracts";
import type { SourceFileErrorRow } from "../src/db/sources.js";
import { MAX_DESCRIPTION } from "../src/validate.js";
import { MODULE_MAX_BYTES, parseModule } from "../src/module/parse.js";
import type { TreeFile } from "../src/sources/git.js";
import { parseTree } from "../src/sources/tree.js";

// A commit's files validated as a whole: the same refusals (reason, line, column) as the upload
// and assignment APIs, every file's problems at once, nothing accepted from a tree with errors.

const file = (path: string, content: string): TreeFile => ({ path, content, bytes: Buffer.byteLength(content) });
const module = (name: string, extra = "") =>
  file(
    `modules/${name}.yaml`,
    `name: ${name}\ndescription: ${name} module\nresources:\n  - id: motd\n    type: file\n    path: /etc/motd-${name}\n    content: "hi"\n${extra}`,
  );
const NONE: ReadonlySet<string> = new Set();
/** The error fields a test pins down, in the tree's order. */
const where = (errors: SourceFileErrorRow[]) =>
  errors.map(({ file, line, column, code }) => ({ file, line, column, code }));

t.test("a valid tree yields its modules and assignments with every field", async (t) => {
  const web = module("web");
  const tree = parseTree(
    [
      web,
      module("base"),
      file(
        "assignments/web.yml",
        [
          "name: web",
          "selector: role in (web, api)",
          "modules: [base, web, base, ntp]",
          "description: the web tier",
          "enforce: true",
          "apply_on_sync: true",
          'batch: "25%"',
          "max_failures: 2",
          "",
        ].join("\n"),
      ),
      file("assignments/minimal.yaml", "selector: env=prod\nmodules:\n  - base\n"),
      file("assignments/numbered.yaml", "selector: env=prod\nmodules: [base]\nbatch: 10\nmax_failures: 0\n"),
    ],
    new Set(["ntp"]),
  );
  t.same(tree.errors, []);
  t.same(
    tree.modules.map((m) => m.name),
    ["base", "web"],
    "sorted by path",
  );
  const w = tree.modules.find((m) => m.name === "web")!;
  t.equal(w.file, "modules/web.yaml");
  t.equal(w.content, web.content);
  t.equal(w.sha256, createHash("sha256").update(web.content).digest("hex"));
  t.same(w.parsed, parseModule(web.content, "web"), "parsed exactly as an upload is");
  t.same(tree.assignments, [
    {
      file: "assignments/minimal.yaml",
      name: "minimal",
      selector: "env=prod",
      modules: ["base"],
      description: null,
      enforce: false,
      apply_on_sync: false,
      batch: "",
      max_failures: null,
    },
    {
      file: "assignments/numbered.yaml",
      name: "numbered",
      selector: "env=prod",
      modules: ["base"],
      description: null,
      enforce: false,
      apply_on_sync: false,
      batch: "10",
      max_failures: 0,
    },
    {
      file: "assignments/web.yml",
      name: "web",
      selector: "role in (web, api)",
      modules: ["base", "web", "ntp"],
      description: "the web tier",
      enforce: true,
      apply_on_sync: true,
      batch: "25%",
      max_failures: 2,
    },
  ]);
});

t.test("module files are refused with the upload API's reasons and positions", async (t) => {
  const bad = [
    file("modules/a.yaml", "name: a\nresources:\n  - id: x\n   type: file\n"),
    file("modules/b.yaml", "name: other\nresources: []\n"),
    file("modules/c.yaml", "name: c\nresources:\n  - id: x\n    type: registry\n"),
    file("modules/d.yaml", "name: d\nresources:\n  - { id: x, type: file, path: /x, requires: [zz] }\n"),
  ];
  const tree = parseTree([...bad, module("ok")], NONE);
  const upload = (f: TreeFile) => {
    try {
      parseModule(f.content, f.path.slice(8, -5));
    } catch (err) {
      const e = err as { reason: string; message: string; details: { line: number; column: number } };
      return { file: f.path, line: e.details.line, column: e.details.column, code: e.reason, message: e.message };
    }
    throw new Error(`${f.path} parsed`);
  };
  t.same(tree.errors, bad.map(upload), "same reason, message, line and column as parseModule");
  t.same(
    where(tree.errors).map((e) => [e.code, e.line]),
    [
      ["invalid_yaml", 4],
      ["name_mismatch", 1],
      ["unknown_resource_type", 4],
      ["unknown_requirement", 3],
    ],
  );
  t.same(
    tree.modules.map((m) => m.name),
    ["ok"],
    "only the valid module is returned",
  );
});

t.test("an oversized module is refused without being read, with the upload API's code", async (t) => {
  const tree = parseTree([{ path: "modules/big.yaml", content: "", bytes: MODULE_MAX_BYTES + 1 }], NONE);
  t.same(where(tree.errors), [{ file: "modules/big.yaml", line: 0, column: 0, code: "module_too_large" }]);
  const api = (() => {
    try {
      parseModule("x".repeat(MODULE_MAX_BYTES + 1), "big");
    } catch (err) {
      return (err as OrchError).reason;
    }
  })();
  t.equal(api, "module_too_large", "the upload API's code for the same content");
  t.match(tree.errors[0]!.message, /262145 bytes/);
  t.same(tree.modules, []);
  const edge = "x".repeat(MODULE_MAX_BYTES);
  t.equal(
    parseTree([{ path: "modules/big.yaml", content: edge, bytes: MODULE_MAX_BYTES }], NONE).errors[0]?.code,
    "invalid_module",
  );
});

t.test("assignment files report every problem at its line and column", async (t) => {
  const content = [
    "name: other", // 1: name_mismatch
    "selector: env=prod and (", // 2: invalid_selector at the offending character
    "modules:", // 3
    "  - base", // 4
    "  - missing", // 5: module_not_found
    "enforce: yes please", // 6: not a boolean
    "apply_on_sync: 1", // 7: not a boolean
    "batch: 0", // 8: invalid_batch (fanout's rule)
    "max_failures: -1", // 9
    "colour: blue", // 10: unknown field
    "description: [1]", // 11
    "",
  ].join("\n");
  const tree = parseTree([module("base"), file("assignments/web.yaml", content)], NONE);
  t.same(where(tree.errors), [
    { file: "assignments/web.yaml", line: 1, column: 7, code: "name_mismatch" },
    { file: "assignments/web.yaml", line: 2, column: 20, code: "invalid_selector" },
    { file: "assignments/web.yaml", line: 5, column: 5, code: "module_not_found" },
    { file: "assignments/web.yaml", line: 6, column: 10, code: "invalid_request" },
    { file: "assignments/web.yaml", line: 7, column: 16, code: "invalid_request" },
    { file: "assignments/web.yaml", line: 8, column: 8, code: "invalid_batch" },
    { file: "assignments/web.yaml", line: 9, column: 15, code: "invalid_request" },
    { file: "assignments/web.yaml", line: 10, column: 1, code: "invalid_request" },
    { file: "assignments/web.yaml", line: 11, column: 14, code: "invalid_request" },
  ]);
  t.match(tree.errors[2]!.message, /no module 'missing'/);
  t.match(tree.errors[7]!.message, /unknown field 'colour'/);
  t.same(tree.assignments, [], "an assignment with errors is not returned");
  t.same(
    tree.modules.map((m) => m.name),
    ["base"],
  );
});

t.test("assignment structure: required fields, lists, names, YAML", async (t) => {
  const one = (content: string, known: ReadonlySet<string> = new Set(["base"])) =>
    where(parseTree([file("assignments/x.yaml", content)], known).errors).map((e) => [e.code, e.line, e.column]);
  t.same(one("modules: [base]\n"), [["invalid_request", 1, 1]], "selector is required");
  t.same(one("selector: env=prod\n"), [["invalid_request", 1, 1]], "modules is required");
  t.same(one("selector: env=prod\nmodules: base\n"), [["invalid_request", 2, 10]], "modules must be a list");
  t.same(
    one("selector: env=prod\nmodules: []\n"),
    [["invalid_request", 2, 10]],
    "at least one module (checkModuleList)",
  );
  t.same(
    one("selector: env=prod\nmodules:\n  - base\n  - Bad Name\n"),
    [["invalid_request", 4, 5]],
    "a module name (validName)",
  );
  t.same(one("selector: env=prod\nmodules: [base, 3]\n"), [["invalid_request", 2, 17]]);
  t.same(one('selector: "env="\nmodules: [base]\n'), [["invalid_selector", 1, 16]], "inside a quoted selector");
  t.same(one("selector: 42\nmodules: [base]\n"), [["invalid_selector", 1, 11]]);
  t.same(one("selector: env=prod\nmodules: [base]\nbatch: 150%\n"), [["invalid_batch", 3, 8]]);
  t.same(one("selector: env=prod\nmodules: [base]\nbatch: true\n"), [["invalid_batch", 3, 8]]);
  t.same(one("selector: env=prod\nmodules: [base]\nmax_failures: 1.5\n"), [["invalid_request", 3, 15]]);
  t.same(one("- selector\n"), [["invalid_request", 1, 1]], "a mapping");
  t.same(one(""), [["invalid_request", 1, 1]], "an empty file");
  t.same(one("selector: env=prod\nmodules: [base\n"), [["invalid_yaml", 3, 1]]);
  t.same(one("selector: a=b\nselector: c=d\nmodules: [base]\n"), [["invalid_yaml", 2, 1]], "duplicate keys");
  const described = (n: number) => one(`selector: env=prod\nmodules: [base]\ndescription: ${"d".repeat(n)}\n`);
  t.same(described(MAX_DESCRIPTION), [], "a description as long as the API allows");
  t.same(described(MAX_DESCRIPTION + 1), [["invalid_request", 3, 14]], "one character more: the API's refusal");
  t.match(
    parseTree(
      [file("assignments/x.yaml", `selector: a=b\nmodules: [base]\ndescription: ${"d".repeat(MAX_DESCRIPTION + 1)}\n`)],
      new Set(["base"]),
    ).errors[0]?.message,
    `description is longer than ${MAX_DESCRIPTION} characters`,
  );
  t.same(
    one("name: x\nselector: env=prod\nmodules: [base]\ndescription:\nbatch:\n"),
    [],
    "name may repeat the file name; null is absent",
  );
  t.same(
    parseTree([file("assignments/x.yaml", "selector: ' env=prod '\nmodules: [base]\n")], new Set(["base"]))
      .assignments[0]?.selector,
    "env=prod",
    "stored trimmed like the API",
  );
});

t.test("references resolve against the tree and the catalog, broken modules are reported once", async (t) => {
  const files = [
    file("modules/broken.yaml", "name: broken\nresources: nope\n"),
    module("web"),
    file("assignments/a.yaml", "selector: env=prod\nmodules: [web, catalogued, broken]\n"),
  ];
  const tree = parseTree(files, new Set(["catalogued"]));
  t.same(
    where(tree.errors).map((e) => [e.file, e.code]),
    [["modules/broken.yaml", "invalid_module"]],
  );
  t.same(
    tree.assignments.map((a) => a.modules),
    [["web", "catalogued", "broken"]],
  );
  const without = parseTree(files.slice(1), NONE);
  t.same(
    where(without.errors).map((e) => [e.code, e.line, e.column]),
    [
      ["module_not_found", 2, 16],
      ["module_not_found", 2, 28],
    ],
  );
});

t.test("duplicate names, bad file names, other paths", async (t) => {
  const tree = parseTree(
    [
      module("web"),
      file("modules/web.yml", "name: web\nresources: []\n"),
      file("assignments/web.yaml", "selector: env=prod\nmodules: [web]\n"),
      file("assignments/web.yml", "selector: env=prod\nmodules: [web]\n"),
      file("modules/Not_Valid!.yaml", "name: x\nresources: []\n"),
      file("README.yaml", "ignored: true\n"),
      file("modules/notes.txt", "ignored"),
    ],
    NONE,
  );
  t.same(where(tree.errors), [
    { file: "assignments/web.yml", line: 0, column: 0, code: "invalid_source" },
    { file: "modules/Not_Valid!.yaml", line: 0, column: 0, code: "invalid_request" },
    { file: "modules/web.yml", line: 0, column: 0, code: "invalid_source" },
  ]);
  t.match(tree.errors[0]!.message, /already defined by assignments\/web\.yaml/);
  t.same(
    tree.modules.map((m) => m.file),
    ["modules/web.yaml"],
    "a module and an assignment may share a name; the first file wins",
  );
  t.same(
    tree.assignments.map((a) => a.file),
    ["assignments/web.yaml"],
  );
});

t.test("more than SOURCE_MAX_FILES files is one error", async (t) => {
  const many = Array.from({ length: SOURCE_MAX_FILES + 1 }, (_, i) => module(`m${i}`));
  const tree = parseTree(many, NONE);
  t.same(where(tree.errors), [{ file: "", line: 0, column: 0, code: "invalid_source" }]);
  t.same(tree.modules, []);
  t.equal(parseTree(many.slice(0, SOURCE_MAX_FILES), NONE).modules.length, SOURCE_MAX_FILES);
});

t.test("errors are sorted by file, then line", async (t) => {
  const tree = parseTree(
    [
      file("assignments/z.yaml", "selector: env=\nmodules: [nope]\n"),
      file("modules/a.yaml", "name: a\nresources: nope\n"),
      file("assignments/b.yaml", "modules: [nope]\nselector: (\n"),
    ],
    NONE,
  );
  t.same(
    where(tree.errors).map((e) => `${e.file}:${e.line}`),
    [
      "assignments/b.yaml:1",
      "assignments/b.yaml:2",
      "assignments/z.yaml:1",
      "assignments/z.yaml:2",
      "modules/a.yaml:2",
    ],
  );
});

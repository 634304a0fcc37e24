import t from "tap";
import { Text } from "@codemirror/state";
import { ApiError } from "@orch/client";
import { toDiagnostics } from "../src/editor/diagnostics.js";
import { shortDigest } from "../src/lib/digest.js";
import { moduleNameOf, MODULE_TEMPLATE, nameLineOf, yamlProblemOf } from "../src/pages/modules/yaml-source.js";

const problem = (extra: Record<string, unknown>) =>
  new ApiError({
    type: "about:blank",
    title: "Bad Request",
    status: 400,
    detail: "bad",
    code: "invalid_module",
    ...extra,
  });

t.test("the module's name is read from its top-level name: line", async (t) => {
  t.equal(moduleNameOf("name: web-base\nresources: []\n"), "web-base");
  t.equal(moduleNameOf("# a comment\ndescription: x\nname: 'quoted'  # trailing\n"), "quoted");
  t.equal(moduleNameOf('name: "double"\n'), "double");
  t.equal(moduleNameOf("resources:\n  - name: nested\n"), undefined, "an indented name is not the module's");
  t.equal(moduleNameOf("name:\nresources: []\n"), undefined, "an empty name is no name");
  t.equal(moduleNameOf(MODULE_TEMPLATE), "my-module", "the starting template names itself");
  t.equal(nameLineOf("# c\n\nname: x\n"), 3);
  t.equal(nameLineOf("resources: []\n"), undefined);
});

t.test("a refusal points at the line the API named", async (t) => {
  t.same(yamlProblemOf(problem({ field: "content", path: "resources[0].conent", line: 7, column: 5 }), ""), {
    line: 7,
    column: 5,
    message: "bad",
  });
  t.same(
    yamlProblemOf(problem({ errors: [{ field: "content", message: "tab indent", line: 3, column: 1 }] }), ""),
    { line: 3, column: 1, message: "tab indent" },
    "an errors[] entry with a line",
  );
  t.same(
    yamlProblemOf(problem({ errors: [{ field: "name", message: "must match" }] }), "# x\nname: Bad Name\n"),
    { line: 2, message: "must match" },
    "a refused name points at the name: line",
  );
  t.equal(yamlProblemOf(problem({ line: 0 }), ""), undefined, "no line 0");
  t.equal(yamlProblemOf(problem({ line: "4" }), ""), undefined, "a line is a number");
  t.equal(yamlProblemOf(problem({}), ""), undefined, "a refusal without a line (module_too_large)");
  t.equal(
    yamlProblemOf(new ApiError({ type: "x", title: "x", status: 409, detail: "x", code: "module_in_use" }), ""),
    undefined,
    "only 400s are about the content",
  );
  t.equal(yamlProblemOf(new Error("network"), ""), undefined);
});

t.test("diagnostics cover the named line from the column", async (t) => {
  const doc = Text.of(["name: x", "resources:", "  - id: a", ""]);
  const [d] = toDiagnostics(doc, [{ line: 3, column: 5, message: "m" }]);
  t.same(d, { from: doc.line(3).from + 4, to: doc.line(3).to, severity: "error", message: "m", source: "API" });
  const [whole] = toDiagnostics(doc, [{ line: 2, message: "m" }]);
  t.same([whole!.from, whole!.to], [doc.line(2).from, doc.line(2).to], "no column: the whole line");
  const [past] = toDiagnostics(doc, [{ line: 2, column: 99, message: "m" }]);
  t.equal(past!.from, doc.line(2).from, "a column past the text: the whole line");
  const [beyond] = toDiagnostics(doc, [{ line: 40, message: "m" }]);
  t.equal(beyond!.from, doc.line(4).from, "a line beyond the document marks the last line");
  t.same(toDiagnostics(doc, []), []);
});

t.test("a bundle file's digest is shortened to 12 hex digits", async (t) => {
  const hex = "0123456789abcdef".repeat(4);
  t.equal(shortDigest(`sha256:${hex}`), "sha256:0123456789ab…");
  t.equal(shortDigest("sha256:0123"), "sha256:0123", "already short");
  t.equal(shortDigest("x".repeat(30)), `${"x".repeat(19)}…`, "an unknown form is cut");
  t.equal(shortDigest("odd"), "odd");
});

t.test("a refusal of an agent's own values points at the line the API named", async (t) => {
  const refusal = new ApiError({
    type: "about:blank",
    title: "Bad Request",
    status: 400,
    detail: "invalid YAML at line 3: Flow sequence in block collection must end with a ]",
    code: "invalid_values",
    field: "content",
    line: 3,
  });
  t.same(yamlProblemOf(refusal, "a: 1\nb: [2\nc: 3\n"), {
    line: 3,
    column: undefined,
    message: refusal.problem.detail,
  });
});

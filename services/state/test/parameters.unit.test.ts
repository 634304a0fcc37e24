import t, { type Test } from "tap";
import { OrchError } from "@orch/kit";
import { parameterTemplateProblem } from "../src/module/liquid/context.js";
import { parseModule } from "../src/module/parse.js";
import {
  checkParameters,
  coerceParameter,
  type DeclaringModule,
  PARAMETER_NAME_RE,
  type ParameterDecl,
  resolveParameters,
} from "../src/module/parameters.js";

// Module parameters: declarations refused at upload with their YAML line, an assignment's given
// values checked against them, defaults applied, and rendered text coerced to the declared type.

const webapp = (parameters: string, version = 2) =>
  [
    `version: ${version}`,
    "name: webapp",
    "parameters:",
    parameters,
    "resources:",
    "  - { id: conf, type: file, path: /tmp/orch-never-applied/site.conf, content: x }",
    "",
  ].join("\n");

function refuse(t: Test, content: string, line: number, message: RegExp, path?: string): void {
  try {
    parseModule(content, "webapp");
    t.fail(`expected a refusal at line ${line}`);
  } catch (err) {
    t.type(err, OrchError);
    const e = err as OrchError;
    t.equal(e.reason, "invalid_module");
    t.equal(e.details.line, line, `line ${line}: ${e.message}`);
    if (path !== undefined) t.equal(e.details.path, path);
    t.match(e.message, message);
  }
}

t.test("unit: a v2 module's declarations parse, with defaults and descriptions", async (t) => {
  const m = parseModule(
    webapp(
      [
        "  site_name: { type: string, required: true, description: the site's host name }",
        "  port: { type: integer, default: 8080 }",
        "  ratio: { type: number, default: 0.5 }",
        "  debug: { type: boolean, default: false }",
        "  upstreams: { type: list, default: [a, b] }",
        "  headers: { type: map, default: { x: 1 } }",
        "  extra: { type: any }",
        '  from_values: { type: integer, default: "{{ values.port }}" }',
      ].join("\n"),
    ),
    "webapp",
  );
  t.same(m.parameters, {
    site_name: { type: "string", required: true, description: "the site's host name" },
    port: { type: "integer", default: 8080, required: false, description: "" },
    ratio: { type: "number", default: 0.5, required: false, description: "" },
    debug: { type: "boolean", default: false, required: false, description: "" },
    upstreams: { type: "list", default: ["a", "b"], required: false, description: "" },
    headers: { type: "map", default: { x: 1 }, required: false, description: "" },
    extra: { type: "any", required: false, description: "" },
    from_values: { type: "integer", default: "{{ values.port }}", required: false, description: "" },
  });
  t.same(parseModule("name: plain\nresources: []\n", "plain").parameters, {}, "a v1 module declares none");
});

t.test("unit: bad declarations are refused with the YAML line of the problem", async (t) => {
  refuse(t, webapp("  port: { type: int }"), 4, /unknown parameter type 'int' \(known: string, number, integer/);
  refuse(t, webapp("  port:\n    type: integer\n    default: eighty"), 6, /default must be an integer .*not a string/);
  refuse(t, webapp("  a: { type: string }\n  b: { type: list, default: x }"), 5, /default must be a list/);
  refuse(
    t,
    webapp("  site:\n    type: string\n    required: true\n    default: example.org"),
    7,
    /a required parameter has no default/,
    "parameters.site.default",
  );
  refuse(t, webapp("  Port: { type: integer }"), 4, /parameter name 'Port' must be 1-64 characters of a-z/);
  refuse(t, webapp("  9lives: { type: integer }"), 4, /parameter name '9lives'/);
  refuse(t, webapp("  port: { type: integer, min: 1 }"), 4, /unknown field 'min'/, "parameters.port.min");
  refuse(t, webapp("  port: integer"), 4, /a parameter is a map with type/);
  refuse(t, webapp("  port: { default: 1 }"), 4, /type is required/);
  refuse(t, webapp("  port: { type: integer, required: yes }"), 4, /required must be true or false/);
  refuse(t, webapp("  - port"), 4, /parameters is a map/);
  refuse(t, webapp("  port: { type: integer }", 1), 3, /^parameters \(line 3\): parameters need version: 2$/);
  refuse(t, "name: webapp\nparameters: {}\nresources: []\n", 2, /parameters need version: 2/, "parameters");
});

t.test("unit: the one name rule", async (t) => {
  for (const ok of ["a", "_x", "site_name", "p2", "a".repeat(64)]) t.ok(PARAMETER_NAME_RE.test(ok), ok);
  for (const bad of ["", "A", "2a", "site-name", "a.b", "a".repeat(65), "é"]) t.notOk(PARAMETER_NAME_RE.test(bad), bad);
});

/** The OrchError `fn` throws (undefined when it does not). */
function thrown(fn: () => unknown): OrchError | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof OrchError) return err;
    throw err;
  }
  return undefined;
}

const decl = (type: ParameterDecl["type"], extra: Partial<ParameterDecl> = {}): ParameterDecl => ({
  type,
  required: false,
  description: "",
  ...extra,
});
const modules: DeclaringModule[] = [
  {
    name: "webapp",
    parameters: {
      site_name: decl("string", { required: true }),
      port: decl("integer", { default: 8080 }),
      upstreams: decl("list"),
      tls: decl("boolean", { default: false }),
    },
  },
  { name: "base", parameters: { port: decl("number"), motd: decl("string", { default: "hi" }) } },
  { name: "legacy", parameters: {} },
];

t.test("unit: given parameters are checked against every module's declarations", async (t) => {
  t.same(checkParameters(modules, { site_name: "a.example", port: 80, upstreams: ["x"] }), [], "valid");
  t.same(checkParameters(modules, { site_name: "{{ values.site }}", port: "{{ values.port }}" }), [], "templates");
  t.same(checkParameters([{ name: "legacy", parameters: {} }], undefined), [], "none given, none declared");
  const syntax = checkParameters(modules, { site_name: "{% if %}" }, parameterTemplateProblem);
  t.same(
    syntax.map((p) => [p.code, p.parameter]),
    [["invalid_parameter", "site_name"]],
    "a template checked when asked",
  );
  t.same(checkParameters(modules, { site_name: "{% if %}" }), [], "not checked without the checker");

  const codes = (given: unknown) => checkParameters(modules, given).map((p) => [p.code, p.parameter]);
  t.same(codes({ port: 80 }), [["missing_parameter", "site_name"]]);
  t.same(codes({ site_name: "a", prot: 80 }), [["unknown_parameter", "prot"]]);
  t.same(codes({ site_name: "a", port: "80" }), [["invalid_parameter", "port"]]);
  t.same(codes({ site_name: "a", port: 80.5 }), [["invalid_parameter", "port"]], "an integer for both modules");
  t.same(codes({ site_name: 1, tls: "yes", upstreams: "a,b" }), [
    ["invalid_parameter", "site_name"],
    ["invalid_parameter", "tls"],
    ["invalid_parameter", "upstreams"],
  ]);
  t.same(codes({ site_name: null }), [["invalid_parameter", "site_name"]], "null is no value");
  t.same(codes([1]), [["invalid_request", undefined]]);
  t.same(codes({ site_name: "x".repeat(70 * 1024) }), [["invalid_request", undefined]], "size limit");

  const [unknown] = checkParameters(modules, { site_name: "a", prot: 1 });
  t.equal(unknown!.message, "parameter 'prot' is declared by none of the assignment's modules (webapp, base, legacy)");
  const [wrong] = checkParameters(modules, { site_name: "a", port: "80" });
  t.equal(wrong!.message, "parameter 'port' must be an integer (module webapp declares it integer), not a string");
  const [missing] = checkParameters(modules, {});
  t.equal(missing!.message, "module webapp requires parameter 'site_name' (string)");
});

t.test("unit: resolveParameters applies defaults for one module's declarations", async (t) => {
  const web = modules[0]!.parameters;
  t.same(resolveParameters(web, { site_name: "a", motd: "ignored: base's" }), {
    site_name: "a",
    port: 8080,
    tls: false,
  });
  t.same(resolveParameters(web, { site_name: "a", port: 81, upstreams: [] }), {
    site_name: "a",
    port: 81,
    upstreams: [],
    tls: false,
  });
  t.same(resolveParameters({}, undefined), {});
  t.match(
    thrown(() => resolveParameters(web, {})),
    { reason: "missing_parameter", details: { parameter: "site_name" } },
  );
});

t.test("unit: coerceParameter types rendered text", async (t) => {
  t.equal(coerceParameter(decl("integer"), "8080", "port"), 8080);
  t.equal(coerceParameter(decl("integer"), " -3 ", "port"), -3);
  t.equal(coerceParameter(decl("integer"), 7, "port"), 7, "a literal of the type is kept");
  t.equal(coerceParameter(decl("number"), "0.25"), 0.25);
  t.equal(coerceParameter(decl("boolean"), "true"), true);
  t.equal(coerceParameter(decl("boolean"), "false"), false);
  t.same(coerceParameter(decl("list"), '["a", "b"]'), ["a", "b"], "JSON");
  t.same(coerceParameter(decl("list"), "[a, b]"), ["a", "b"], "YAML flow");
  t.same(coerceParameter(decl("map"), '{"a": 1}'), { a: 1 });
  t.equal(coerceParameter(decl("string"), "8080"), "8080");
  t.equal(coerceParameter(decl("any"), "x"), "x");
  for (const [type, text] of [
    ["integer", "80.5"],
    ["integer", "eighty"],
    ["integer", "99999999999999999999"],
    ["number", "1e"],
    ["boolean", "yes"],
    ["list", "{a: 1}"],
    ["map", "[1]"],
    ["list", "[unclosed"],
  ] as const)
    t.match(
      thrown(() => coerceParameter(decl(type), text, "p")),
      { reason: "invalid_parameter", details: { parameter: "p", expected: type } },
      `${type} from ${text}`,
    );
  t.throws(() => coerceParameter(decl("string"), 5, "p"), {
    message: "parameter 'p' must be a string, not an integer",
  });
});

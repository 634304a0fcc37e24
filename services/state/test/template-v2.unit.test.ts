import t from "tap";
import { compile, renderCompiled, TemplateSyntaxError, type TemplateContext } from "../src/module/liquid/compile.js";
import { engine, indent } from "../src/module/liquid/engine.js";

// The version-2 template engine (module/liquid): LiquidJS sandboxed, its filters, its static
// analysis and its errors. Pure: no database, no agent.

const ctx = (over: Partial<TemplateContext> = {}): TemplateContext => ({
  values: { upstreams: ["10.0.0.1", "10.0.0.2"], port: 8080, tls: true, site: { name: "shop", aliases: ["a", "b"] } },
  parameters: { workers: 4 },
  attributes: { os: "linux" },
  tags: { env: "prod" },
  secrets: {},
  agent: { node_id: "n-1", name: "web-1" },
  ...over,
});

const render = (source: string, c: TemplateContext = ctx()) => renderCompiled(compile(source), c);

/** The error a template's render throws, as { message, line } (LiquidJS keeps the line in its token). */
function failure(source: string, c: TemplateContext = ctx()): string {
  try {
    render(source, c);
  } catch (err) {
    return (err as Error).message.split("\n")[0]!;
  }
  throw new Error(`rendered: ${source}`);
}

function refusal(source: string): TemplateSyntaxError {
  try {
    compile(source);
  } catch (err) {
    if (err instanceof TemplateSyntaxError) return err;
    throw err;
  }
  throw new Error(`accepted: ${source}`);
}

t.test("conditions, loops and the whole context render", async (t) => {
  t.equal(
    render("{% for u in values.upstreams %}server {{ u }}:{{ values.port }};\n{% endfor %}"),
    "server 10.0.0.1:8080;\nserver 10.0.0.2:8080;\n",
  );
  t.equal(render("{% if tags.env == 'prod' %}p{% elsif tags.env == 'staging' %}s{% else %}d{% endif %}"), "p");
  t.equal(render("{{ parameters.workers | plus: 1 }} {{ attributes.os | upcase }}"), "5 LINUX");
  t.equal(render("{{ agent.name }}@{{ agent.node_id }}"), "web-1@n-1");
  t.equal(render("{{ values.site.aliases | join: ', ' }}"), "a, b");
  t.equal(render("{% unless values.tls %}plain{% endunless %}{% if values.tls %}tls{% endif %}"), "tls");
  t.equal(render("{% raw %}{{ jinja }}{% endraw %}"), "{{ jinja }}", "raw leaves other template syntax alone");
});

t.test("filters: to_json, to_yaml, indent, b64encode/b64decode, default", async (t) => {
  t.equal(render("{{ values.site | to_json }}"), '{"name":"shop","aliases":["a","b"]}');
  t.equal(render("{{ values.site | to_yaml }}"), "name: shop\naliases:\n  - a\n  - b");
  t.equal(render("x:\n  {{ values.site | to_yaml | indent: 2 }}"), "x:\n  name: shop\n  aliases:\n    - a\n    - b");
  t.equal(indent("a\n\nb", 4), "a\n\n    b", "blank lines stay blank, the first line is left");
  t.equal(indent("a\nb", 2, true), "  a\n  b", "the first line too when asked");
  t.equal(render("{{ 'hello' | b64encode }}"), "aGVsbG8=");
  t.equal(render("{{ 'aGVsbG8=' | b64decode }}"), "hello");
  t.equal(render("{{ values.missing | default: 'fallback' }}"), "fallback", "default reads a missing value");
  t.equal(render("{% if values.missing %}y{% else %}n{% endif %}"), "n", "if tests a missing value");
});

t.test("an unknown variable is an error naming it, with its line", async (t) => {
  t.match(failure("one\ntwo {{ values.nope }}"), /undefined variable: values\.nope, line:2/);
  t.match(failure("{{ values.site.nope }}"), /values\.site\.nope/);
});

t.test("refused when parsed: syntax, unknown filters and tags, misspelt namespaces", async (t) => {
  const syntax = refusal("a\nb\n{% for x in values.upstreams %}{{ x }}");
  t.match(syntax.message, /not closed/);
  t.equal(syntax.line, 3, "the line of the unclosed tag");
  t.match(refusal("{{ values.port | nofilter }}").message, /undefined filter: nofilter/);
  t.match(refusal("{{ values.port | sample }}").message, /undefined filter: sample/, "sample is unstable: removed");
  t.match(refusal("{{ value.port }}").message, /unknown namespace 'value'.*did you mean 'values'/);
  t.match(refusal("{{ secret.x }}").message, /did you mean 'secrets'/);
  t.match(refusal("\n{{ hostname }}"), { line: 2, message: /unknown variable 'hostname'/ });
  t.match(refusal("{{ agent.ip }}").message, /agent has no 'ip'/);
  t.match(
    refusal("{% for x in values.xs %}{% endfor %}{{ x }}").message,
    /unknown variable 'x'/,
    "a loop variable ends with its loop",
  );
  t.doesNotThrow(() => compile("{% assign n = values.port | plus: 1 %}{{ n }}{% capture c %}x{% endcapture %}{{ c }}"));
});

t.test("secrets are read by a literal name only", async (t) => {
  t.same(compile("{{ secrets.db }} {{ secrets['tls.key'] }} {{ secrets.db }}").secrets, ["db", "tls.key"]);
  t.match(refusal("{{ secrets[values.which] }}").message, /literal name/);
  t.match(refusal("{% assign s = secrets %}{{ s.db }}").message, /literal name/, "the whole map is refused");
  t.match(refusal("{% for s in secrets %}{{ s }}{% endfor %}").message, /literal name/);
  t.match(refusal("{{ secrets.tls.key }}").message, /secrets\["tls\.key"\]/, "a dotted name says how to write it");
  t.equal(render("{{ secrets['tls.key'] }}", ctx({ secrets: { "tls.key": "K" } })), "K");
});

t.test("the sandbox: no process, prototypes, globals or files", async (t) => {
  for (const source of ["{{ process }}", "{{ globalThis }}", "{{ constructor }}", "{{ __proto__ }}", "{{ require }}"])
    t.match(refusal(source).message, /unknown variable/, source);
  for (const source of [
    "{{ values.constructor }}",
    "{{ values.upstreams.constructor.name }}",
    "{{ values.__proto__ }}",
    "{{ values.site.hasOwnProperty }}",
    "{{ values.site['constructor'] }}",
    "{% assign k = 'constructor' %}{{ values.site[k] }}",
  ])
    t.match(failure(source), /undefined variable/, source);
  t.equal(render("{{ values.site | map: 'constructor' | size }}"), "1", "a filter reads no prototype either");
  t.equal(render("{{ values.site | map: 'constructor' | first }}"), "", "(map yields nothing for it)");
  for (const source of [
    "{% include '/etc/passwd' %}",
    "{% render 'x' %}",
    "{% layout 'x' %}",
    "{% block a %}{% endblock %}",
  ])
    t.match(refusal(source).message, /tag "\w+" not found/, source);
});

t.test("a runaway template fails with a clear error, not a hang", async (t) => {
  const started = Date.now();
  t.match(failure("{% for i in (1..1000000) %}x{% endfor %}"), /template loop limit exceeded/);
  t.match(
    failure("{% for i in (1..400) %}{% for j in (1..400) %}x{% endfor %}{% endfor %}"),
    /loop limit exceeded: more than 100000 loop iterations in one render/,
    "nested loops count together",
  );
  t.equal(render("{% for i in (1..1000) %}x{% endfor %}").length, 1000, "an ordinary loop renders");
  t.match(
    failure("{% for i in (1..100000000) %}{% for j in (1..100000000) %}{% endfor %}{% endfor %}"),
    /limit exceeded/,
  );
  const big = "x".repeat(20_000_000);
  t.match(
    failure("{% for i in (1..10) %}{{ values.big | append: values.big }}{% endfor %}", ctx({ values: { big } })),
    /memory alloc limit exceeded/,
  );
  t.ok(Date.now() - started < 20_000, "every limit is reached within seconds");
});

t.test("each distinct string is parsed once; renders are kept by the inputs read", async (t) => {
  const a = compile("{{ values.port }}-{{ tags.env }}");
  t.equal(compile("{{ values.port }}-{{ tags.env }}"), a, "the same text is the same parsed template");
  t.same(
    a.refs.map((r) => [r.ns, r.key]),
    [
      ["values", "port"],
      ["tags", "env"],
    ],
  );
  t.equal(renderCompiled(a, ctx()), "8080-prod");
  t.equal(renderCompiled(a, ctx({ agent: { node_id: "n-2", name: "web-2" } })), "8080-prod", "an input not read");
  t.equal(renderCompiled(a, ctx({ tags: { env: "staging" } })), "8080-staging", "an input read changes it");
  t.equal(renderCompiled(a, ctx({ values: { port: 9090 } })), "9090-prod");
  const missing = compile("{{ values.p | default: 'none' }}");
  t.equal(renderCompiled(missing, ctx({ values: {} })), "none");
  t.equal(renderCompiled(missing, ctx({ values: { p: null } })), "none");
  t.equal(renderCompiled(missing, ctx({ values: { p: "set" } })), "set");
});

t.test("plain {{ ns.key }} templates render by concatenation, exactly as the engine does", async (t) => {
  const c = ctx({ attributes: { os: "linux", empty: "" }, values: { port: 8080, name: "shop" } });
  for (const source of [
    "host={{ attributes.os }} i=3\n",
    "{{attributes.os}}{{ attributes.empty }}{ x } {{ tags.env }}",
    "{{ values.name }}:{{ values.port }}",
    "}} %} {{ agent.name }}",
  ]) {
    const compiled = compile(source);
    t.ok(compiled.simple, `simple: ${source}`);
    t.equal(renderCompiled(compiled, c), String(engine.parseAndRenderSync(source, c)), source);
  }
  for (const source of [
    "{{ attributes.os | upcase }}",
    "{{- attributes.os }}",
    "{% if x %}{% endif %}",
    "{{ attributes.os }}{% raw %}{% endraw %}",
  ])
    t.notOk(compile(source.replace("x %", "values.port %")).simple, `not simple: ${source}`);
  t.match(failure("{{ values.nope }}"), /undefined variable: values\.nope/, "a missing key still fails in the engine");
});

t.test("a loop over a value that is not a list or a map is an error naming it", async (t) => {
  const c = ctx({ values: { port: 8080, name: "shop", on: true, none: null, m: { a: 1 }, l: [1] } });
  t.match(
    failure("\n{% for x in values.port %}{{ x }}{% endfor %}", c),
    /for loops over a list or a map; values\.port is a number, line:2/,
  );
  t.match(failure("{% for x in values.name %}{{ x }}{% endfor %}", c), /values\.name is a string/);
  t.match(failure("{% for x in values.on %}{{ x }}{% endfor %}", c), /values\.on is a boolean/);
  t.equal(render("{% for x in values.none %}{{ x }}{% else %}none{% endfor %}", c), "none", "null renders else");
  t.equal(render("{% for p in values.m %}{{ p[0] }}={{ p[1] }}{% endfor %}", c), "a=1", "a map loops over its pairs");
  t.equal(render("{% for i in (1..3) %}{{ i }}{% endfor %}{% for x in values.l %}{{ x }}{% endfor %}", c), "1231");
  t.equal(
    render("{% for x in values.l limit: 1 %}{{ forloop.index }}{% endfor %}", c),
    "1",
    "the tag's options still work",
  );
});

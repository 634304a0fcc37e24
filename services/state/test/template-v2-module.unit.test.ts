import { OrchError } from "@orch/kit";
import t from "tap";
import {
  renderResources,
  secretBearing,
  secretNames,
  secretPaths,
  usedInputs,
  type ModuleSource,
  type RenderAgent,
} from "../src/engine/render.js";
import { parseModule } from "../src/module/parse.js";
import { TemplateError } from "../src/module/template.js";

// Version-2 modules through the upload parser and the renderer (engine/render.ts): templates are
// checked at upload with their YAML line, rendered per agent before anything is sent, and what a
// snapshot records renders them again exactly. Version 1 stays as it was.

const refusal = (content: string) => {
  try {
    parseModule(content);
  } catch (err) {
    if (err instanceof OrchError) return { reason: err.reason, message: err.message, details: err.details };
    throw err;
  }
  throw new Error("accepted");
};

const v2 = (resources: string, extra = "") => `version: 2\nname: m\n${extra}resources:\n${resources}`;
const source = (content: string, over: Partial<ModuleSource> = {}): ModuleSource => ({
  name: "m",
  sha256: "x",
  parsed: parseModule(content, "m"),
  ...over,
});
const agent = (over: Partial<RenderAgent> = {}): RenderAgent => ({
  attributes: { os: "linux" },
  tags: { env: "prod" },
  values: { upstreams: ["10.0.0.1", "10.0.0.2"], port: 8080, unused: "x" },
  nodeId: "n-1",
  name: "web-1",
  ...over,
});

const SITE = v2(`  - id: conf
    type: file
    path: /etc/site/{{ tags.env }}.conf
    mode: "{{ values.mode | default: '0644' }}"
    content: |
      # {{ agent.name }}
      {% for u in values.upstreams %}server {{ u }}:{{ values.port }};
      {% endfor %}{% if tags.env == "prod" %}tls on;{% endif %}
`);

t.test("a version-2 module renders loops, conditions and typed fields per agent", async (t) => {
  const [conf] = renderResources([source(SITE)], agent(), new Map());
  t.same(conf!.spec, {
    path: "/etc/site/prod.conf",
    mode: "0644",
    content: "# web-1\nserver 10.0.0.1:8080;\nserver 10.0.0.2:8080;\ntls on;\n",
  });
  const [staging] = renderResources([source(SITE)], agent({ tags: { env: "staging" }, name: "web-2" }), new Map());
  t.equal(staging!.spec!.path, "/etc/site/staging.conf");
  t.notMatch(String(staging!.spec!.content), /tls on/);
});

t.test("upload refuses a bad template naming the resource, field, YAML line and template line", async (t) => {
  const unclosed = refusal(
    v2("  - id: a\n    type: file\n    path: /a\n    content: |\n      one\n      {% if values.x %}\n"),
  );
  t.equal(unclosed.reason, "invalid_template");
  t.match(
    unclosed.message,
    /^resources\[0\]\.content \(line 7\): template line 2, column 1: .*not closed \(line 9 of the module\)$/,
  );
  const filter = refusal(v2("  - id: a\n    type: file\n    path: /a\n    content: '{{ values.x | nope }}'\n"));
  t.match(filter, { reason: "invalid_template", message: /content \(line 7\).*undefined filter: nope/ });
  const typo = refusal(v2("  - id: a\n    type: exec\n    command: 'echo {{ tag.env }}'\n"));
  t.match(typo, { reason: "invalid_template", message: /command.*did you mean 'tags'/ });
  const nested = refusal(v2("  - id: a\n    type: exec\n    command: x\n    env: { A: '{{ agent.ip }}' }\n"));
  t.match(nested, { reason: "invalid_template", message: /^resources\[0\]\.env\.A \(line 7\).*agent has no 'ip'/ });
  const dynamic = refusal(v2("  - id: a\n    type: file\n    path: /a\n    content: '{{ secrets[values.k] }}'\n"));
  t.match(dynamic, { reason: "invalid_template", message: /literal name/ });
  t.match(refusal(v2("  - id: a\n    type: file\n    path: /a\n    content: \"{% include 'x' %}\"\n")), {
    reason: "invalid_template",
    message: /tag "include" not found/,
  });
});

t.test("the secret rules of version 1 hold for every way version 2 reads one", async (t) => {
  t.match(refusal(v2('  - id: a\n    type: exec\n    command: "echo {{ secrets.pw | upcase }}"\n')), {
    reason: "secret_in_argument",
    message: /\{\{ secrets\.pw \}\} must not be rendered into 'command'/,
  });
  t.match(refusal(v2('  - id: a\n    type: file\n    path: "/a/{% if secrets.pw %}x{% endif %}"\n    content: x\n')), {
    reason: "secret_in_path",
  });
  t.match(
    refusal(
      v2(
        "  - id: a\n    type: cron\n    name: c\n    schedule: '@daily'\n    command: run\n    env: { P: '{{ secrets.pw | strip }}' }\n",
      ),
    ),
    { reason: "invalid_template", message: /cron\.d file is readable by every local user/ },
  );
  const ok = source(
    v2(
      "  - id: a\n    type: exec\n    command: run\n    env: { P: \"{{ secrets['db.pw'] | strip }}\" }\n  - id: b\n    type: file\n    path: /b\n    content: x\n",
    ),
  );
  t.same(secretNames([ok]), ["db.pw"], "secret names come from the analysis, before rendering");
  t.same([...secretBearing([ok])], ["m/a"]);
  const [a] = renderResources([ok], agent(), new Map([["db.pw", " s3cret "]]));
  t.same(a!.spec!.env, { P: "s3cret" });
});

t.test("a render error names module/resource, field and line, and never a secret value", async (t) => {
  const src = source(
    v2(
      "  - id: a\n    type: file\n    path: /a\n    content: |\n      {{ secrets.pw }}\n      {{ values.missing | append: secrets.pw }}\n",
    ),
  );
  t.throws(() => renderResources([src], agent(), new Map([["pw", "hunter2-VALUE"]])), TemplateError);
  try {
    renderResources([src], agent(), new Map([["pw", "hunter2-VALUE"]]));
  } catch (err) {
    const message = (err as Error).message;
    t.match(message, /^m\/a: field 'content' template line 2: undefined variable: values\.missing/);
    t.notMatch(message, /hunter2/);
  }
});

t.test("snapshots keep the values read and the resolved parameters; drift renders them again exactly", async (t) => {
  const content = v2(
    '  - id: a\n    type: file\n    path: /a\n    content: "{{ parameters.greeting }} {{ values.port }} {{ attributes.os }}"\n',
    "parameters:\n  greeting: { type: string, default: hi }\n  count: { type: integer }\n",
  );
  const src = source(content, { parameters: { count: "{{ values.port | plus: 1 }}" } });
  const a = agent();
  const used = usedInputs(src, a.attributes, a.tags, a);
  t.same(used, {
    attributes: { os: "linux" },
    tags: {},
    values: { port: 8080 },
    parameters: { greeting: "hi", count: 8081 },
  });
  const [applied] = renderResources([src], a, new Map());
  // The agent's values and attributes change later; the recorded inputs still render what was applied.
  const later = agent({ values: { port: 1 }, attributes: { os: "bsd" } });
  const [again] = renderResources([{ ...src, inputs: used }], later, new Map());
  t.same(again!.spec, applied!.spec);
  t.equal(applied!.spec!.content, "hi 8080 linux");
});

t.test("a module reading the whole values map records it whole", async (t) => {
  const src = source(v2("  - id: a\n    type: file\n    path: /a\n    content: '{{ values | to_json }}'\n"));
  const a = agent();
  t.same(usedInputs(src, a.attributes, a.tags, a).values, a.values);
});

t.test("parameters: templates over values, typed by their declaration; problems are template errors", async (t) => {
  const content = v2(
    "  - id: a\n    type: file\n    path: /a\n    content: \"{{ parameters.port | plus: 1 }} {{ parameters.hosts | join: ',' }}\"\n",
    "parameters:\n  port: { type: integer, default: 80 }\n  hosts: { type: list, required: true }\n",
  );
  const given = { hosts: "{{ values.upstreams | to_json }}", port: "{{ values.port }}" };
  const [r] = renderResources([source(content, { parameters: given })], agent(), new Map());
  t.equal(r!.spec!.content, "8081 10.0.0.1,10.0.0.2");
  t.throws(
    () => renderResources([source(content, { parameters: {} })], agent(), new Map()),
    /m: parameter 'hosts' \(list\) is required/,
  );
  t.throws(
    () => renderResources([source(content, { parameters: { hosts: "{{ secrets.x }}" } })], agent(), new Map()),
    /parameter 'hosts' template line 1: unknown variable 'secrets'/,
    "a parameter never holds a secret",
  );
});

t.test("secretPaths renders a version-2 path without secrets", async (t) => {
  const src = source(
    v2("  - id: a\n    type: file\n    path: /etc/{{ tags.env }}.key\n    content: '{{ secrets.k }}'\n"),
  );
  t.same([...secretPaths([src], agent())].length, 1);
});

t.test("version 1 is untouched: other template text stays as it is", async (t) => {
  const v1 = parseModule(
    'name: m\nresources:\n  - id: a\n    type: file\n    path: /a\n    content: "{% if x %}{{ foo }}{% endif %} {{ item.x | upper }} {{ tags.env }}"\n',
    "m",
  );
  t.equal(v1.version, 1);
  const [a] = renderResources([{ name: "m", sha256: "x", parsed: v1 }], agent(), new Map());
  t.equal(a!.spec!.content, "{% if x %}{{ foo }}{% endif %} {{ item.x | upper }} prod");
  t.same(usedInputs({ name: "m", sha256: "x", parsed: v1 }, { os: "x" }, { env: "prod" }, agent()), {
    attributes: {},
    tags: { env: "prod" },
  });
  t.match(refusal("version: 3\nname: m\nresources: []\n"), { reason: "invalid_module", message: /must be 1 or 2/ });
});

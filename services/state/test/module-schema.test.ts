import t, { type Test } from "tap";
import { OrchError } from "@orch/kit";
import { MODULE_MAX_BYTES, parseModule } from "../src/module/parse.js";

// Unit tests of the module schema v1: each refusal has its own reason and names the YAML path and line.
const refuse = (t: Test, content: string, reason: string, path: string | undefined, line: number, message?: RegExp) => {
  try {
    parseModule(content, "web-base");
    t.fail(`expected ${reason}`);
  } catch (err) {
    t.type(err, OrchError);
    const e = err as OrchError;
    t.equal(e.code, "INVALID_ARGUMENT", `${reason}: 400`);
    t.equal(e.reason, reason);
    t.equal(e.details.line, line, `${reason} at line ${line}`);
    if (path !== undefined) t.equal(e.details.path, path);
    t.match(e.message, new RegExp(`line ${line}`), "the message names the line");
    if (message) t.match(e.message, message);
  }
};

const mod = (resources: string) => `name: web-base\ndescription: test\nresources:\n${resources}`;

t.test("a valid module parses into typed resources with module-local requires", async (t) => {
  const m = parseModule(
    mod(`  - id: motd
    type: file
    path: /etc/motd
    content: "managed on {{ attributes.hostname }}\\n"
    mode: "0644"
  - id: app-dir
    type: directory
    path: "{{ tags.root }}/app"
    mode: 755
  - id: reload
    type: exec
    command: systemctl reload app
    unless: test -f /run/app.reloaded
    env: { A: 1, B: "x" }
    timeout_seconds: 30
    requires: [motd, app-dir]
  - { id: nginx, type: package, name: nginx, state: latest }
  - { id: nginx-svc, type: service, name: nginx, state: running, enabled: true, requires: nginx }
  - { id: www, type: user, name: www, uid: 1001, groups: [web], system: true }
  - { id: web, type: group, name: web, gid: "{{ attributes.gid }}" }
  - { id: link, type: symlink, path: /srv/current, target: /srv/v1 }
`),
    "web-base",
  );
  t.equal(m.name, "web-base");
  t.equal(m.description, "test");
  t.equal(m.resources.length, 8);
  t.same(m.resources[2], {
    id: "reload",
    type: "exec",
    requires: ["motd", "app-dir"],
    spec: {
      command: "systemctl reload app",
      unless: "test -f /run/app.reloaded",
      env: { A: 1, B: "x" },
      timeout_seconds: 30,
    },
    onchanges: [],
    notify: [],
    watch: [],
  });
  t.same(m.resources[4]!.requires, ["nginx"], "a single requires string is a list of one");
  t.notOk("id" in m.resources[0]!.spec, "spec holds only the type's fields");
});

t.test("bad YAML → invalid_yaml with the line", async (t) => {
  refuse(t, "name: web-base\nresources:\n  - id: a\n   type: file\n", "invalid_yaml", undefined, 4);
  refuse(t, "name: web-base\nresources: [\n", "invalid_yaml", undefined, 3);
  refuse(t, "name: web-base\nname: again\nresources: []\n", "invalid_yaml", undefined, 2, /unique/);
});

t.test("name must equal the module name", async (t) => {
  refuse(
    t,
    "description: x\nname: other\nresources: []\n",
    "name_mismatch",
    "name",
    2,
    /'other' does not match 'web-base'/,
  );
  refuse(t, "resources: []\n", "invalid_module", "name", 1, /is required/);
  refuse(t, "name: Web Base\nresources: []\n", "invalid_module", "name", 1);
});

t.test("unknown resource type", async (t) => {
  refuse(
    t,
    mod("  - id: a\n    type: file\n    path: /a\n  - id: b\n    type: registry\n    key: x\n"),
    "unknown_resource_type",
    "resources[1].type",
    8,
    /unknown resource type 'registry'/,
  );
});

t.test("duplicate ids", async (t) => {
  refuse(
    t,
    mod("  - id: a\n    type: file\n    path: /a\n  - id: a\n    type: directory\n    path: /b\n"),
    "duplicate_resource_id",
    "resources[1].id",
    7,
    /already used by resources\[0\]/,
  );
});

t.test("unknown and cyclic requires", async (t) => {
  refuse(
    t,
    mod("  - id: a\n    type: file\n    path: /a\n    requires: [a2, b]\n  - id: a2\n    type: file\n    path: /a2\n"),
    "unknown_requirement",
    "resources[0].requires[1]",
    7,
    /requires 'b'/,
  );
  refuse(
    t,
    mod(
      "  - id: a\n    type: file\n    path: /a\n    requires: [c]\n  - id: b\n    type: file\n    path: /b\n    requires: [a]\n  - id: c\n    type: file\n    path: /c\n    requires: [b]\n",
    ),
    "cyclic_requires",
    "resources[0].requires",
    7,
    /a → c → b → a/,
  );
  refuse(
    t,
    mod("  - id: a\n    type: file\n    path: /a\n    requires: [a]\n"),
    "cyclic_requires",
    "resources[0].requires",
    7,
    /a → a/,
  );
});

t.test("field errors name the field and its line", async (t) => {
  refuse(
    t,
    mod("  - id: a\n    type: file\n    path: /a\n    conent: hi\n"),
    "invalid_module",
    "resources[0].conent",
    7,
    /unknown field 'conent'/,
  );
  refuse(
    t,
    mod("  - id: a\n    type: file\n    path: relative\n"),
    "invalid_module",
    "resources[0].path",
    6,
    /absolute path/,
  );
  refuse(
    t,
    mod("  - id: a\n    type: file\n    path: /a\n    mode: rw\n"),
    "invalid_module",
    "resources[0].mode",
    7,
    /octal/,
  );
  refuse(
    t,
    mod("  - id: a\n    type: exec\n    command: a\n    script: b\n"),
    "invalid_module",
    "resources[0].command",
    6,
    /exactly one of command or script/,
  );
  refuse(
    t,
    mod("  - id: a\n    type: package\n    state: installed\n    name: x\n"),
    "invalid_module",
    "resources[0].state",
    6,
  );
  refuse(
    t,
    mod("  - id: a\n    type: service\n    name: x\n"),
    "invalid_module",
    "resources[0].state",
    4,
    /state or enabled/,
  );
  refuse(t, mod("  - id: bad/id\n    type: file\n    path: /a\n"), "invalid_module", "resources[0].id", 4);
  refuse(t, mod("  - type: file\n    path: /a\n"), "invalid_module", "resources[0].id", 4, /is required/);
  refuse(t, mod("  - just a string\n"), "invalid_module", "resources[0]", 4);
  refuse(t, "name: web-base\nresources: []\nextra: 1\n", "invalid_module", "extra", 3, /unknown field 'extra'/);
  refuse(t, "name: web-base\nversion: 3\nresources: []\n", "invalid_module", "version", 2);
  refuse(t, "- a\n- b\n", "invalid_module", "(root)", 1);
});

t.test("misspelt template namespaces are refused; foreign templates pass", async (t) => {
  refuse(
    t,
    mod('  - id: a\n    type: file\n    path: /a\n    content: "{{ secret.db }}"\n'),
    "invalid_template",
    "resources[0].content",
    7,
    /did you mean \{\{ secrets/,
  );
  refuse(
    t,
    mod('  - id: a\n    type: exec\n    command: echo\n    env:\n      X: "{{ attribute.os }}"\n'),
    "invalid_template",
    "resources[0].env.X",
    8,
  );
  const m = parseModule(
    mod('  - id: a\n    type: file\n    path: /a\n    content: "{{ item.name }} {{ .Values }}"\n'),
    "web-base",
  );
  t.equal(m.resources[0]!.spec.content, "{{ item.name }} {{ .Values }}");
});

t.test("size limit", async (t) => {
  const big = mod(`  - id: a\n    type: file\n    path: /a\n    content: "${"x".repeat(MODULE_MAX_BYTES)}"\n`);
  try {
    parseModule(big, "web-base");
    t.fail("expected module_too_large");
  } catch (err) {
    t.equal((err as OrchError).reason, "module_too_large");
  }
});

import t, { type Test } from "tap";
import { OrchError } from "@orch/kit";
import { tooOldFor } from "../src/engine/agent-features.js";
import { subset } from "../src/engine/operation-run.js";
import { renderResources, type ModuleSource } from "../src/engine/render.js";
import { parseModule } from "../src/module/parse.js";
import { withReactors } from "../src/module/triggers.js";

// onchanges / notify / watch: upload-time refusals with their YAML lines, and what the agent is
// sent for them (StateResource onchanges / triggered_by).

const v2 = (resources: string) => `version: 2\nname: web\nresources:\n${resources}`;
const site = v2(`  - { id: conf, type: file, path: /etc/nginx/nginx.conf, content: "a" }
  - { id: site, type: file, path: /etc/nginx/site.conf, content: "b", notify: [nginx, reindex] }
  - id: nginx
    type: service
    name: nginx
    state: running
    refresh: reload
    watch: conf
  - { id: reindex, type: exec, command: /usr/local/bin/reindex }
  - { id: audit, type: exec, command: /usr/local/bin/audit, onchanges: [conf, site] }
`);

function refuse(t: Test, content: string, reason: string, path: string, line: number, message: RegExp): void {
  try {
    parseModule(content, "web");
    t.fail(`expected ${reason} at ${path}`);
  } catch (err) {
    t.type(err, OrchError);
    const e = err as OrchError;
    t.equal(e.reason, reason);
    t.equal(e.details.path, path);
    t.equal(e.details.line, line, `${path} at line ${line}`);
    t.match(e.message, message);
  }
}

t.test("unit: a version-2 module with triggers parses; watch is requires plus notify", async (t) => {
  const m = parseModule(site, "web");
  const by = Object.fromEntries(m.resources.map((r) => [r.id, r]));
  t.same(by.nginx!.requires, ["conf"], "watch: conf requires conf");
  t.same(by.nginx!.watch, ["conf"]);
  t.same(by.site!.notify, ["nginx", "reindex"]);
  t.same(by.audit!.onchanges, ["conf", "site"]);
  t.equal(by.nginx!.spec.refresh, "reload");
});

t.test("unit: rendered for the agent — services get triggered_by, execs onchanges, others nothing", async (t) => {
  const parsed = parseModule(site, "web");
  const src: ModuleSource = { name: "web", sha256: "x", parsed };
  const r = renderResources([src], { attributes: {}, tags: {} }, new Map());
  t.same(
    r.map((x) => [x.id, x.requires, x.onchanges ?? [], x.triggeredBy ?? []]),
    [
      ["conf", [], [], []],
      ["site", [], [], []],
      ["nginx", ["web/conf"], [], ["web/conf", "web/site"]],
      ["reindex", [], ["web/site"], []],
      ["audit", [], ["web/conf", "web/site"], []],
    ],
  );
  t.notOk("onchanges" in r[0]!, "a resource without triggers is sent as before");
});

t.test("unit: an agent that does not list the triggers feature gets nothing (agent_too_old)", async (t) => {
  const parsed = parseModule(site, "web");
  const r = renderResources([{ name: "web", sha256: "x", parsed }], { attributes: {}, tags: {} }, new Map());
  const old = { name: "web-1", nodeId: "n1", attributes: { agent_version: "0.9.0" } };
  t.match(tooOldFor(r, old), /^agent web-1 runs orch-agent 0\.9\.0, which does not support onchanges.*web\/nginx/);
  t.equal(tooOldFor(r, { ...old, attributes: { state_features: "triggers" } }), undefined);
  const plain = parseModule("name: p\nresources:\n  - { id: f, type: file, path: /a, content: x }\n", "p");
  const p = renderResources([{ name: "p", sha256: "y", parsed: plain }], { attributes: {}, tags: {} }, new Map());
  t.equal(tooOldFor(p, old), undefined, "a module without triggers still goes to an old agent");
});

t.test("unit: a file from a blob goes only to an agent with a blob cache (agent_too_old)", async (t) => {
  const digest = `sha256:${"ab".repeat(32)}`;
  const bin = parseModule(`name: b\nresources:\n  - { id: f, type: file, path: /a, source: "${digest}" }\n`, "b");
  t.same(
    bin.blobs,
    [{ digest, path: "resources[0].source", line: 3, column: 44 }],
    "where the module names it: its value",
  );
  const r = renderResources([{ name: "b", sha256: "z", parsed: bin }], { attributes: {}, tags: {} }, new Map());
  const agent = (features: string) => ({ name: "web-1", nodeId: "n1", attributes: { state_features: features } });
  t.match(tooOldFor(r, agent("triggers")), /does not support file sources \(used by b\/f\)/);
  t.equal(tooOldFor(r, agent("triggers,blobs")), undefined);
});

t.test("unit: an enforcement subset keeps trigger edges among what it sends only", async (t) => {
  const parsed = parseModule(site, "web");
  const r = renderResources([{ name: "web", sha256: "x", parsed }], { attributes: {}, tags: {} }, new Map());
  const s = subset(r, new Set(["web/site", "web/nginx", "web/audit"]));
  t.same(
    s.map((x) => [x.id, x.requires, x.onchanges ?? [], x.triggeredBy ?? []]),
    [
      ["site", [], [], []],
      ["nginx", [], [], ["web/site"]],
      ["audit", [], ["web/site"], []],
    ],
  );
  const none = subset(r, new Set(["web/reindex", "web/nginx"]));
  t.same(
    none.map((x) => x.id),
    ["nginx"],
    "an exec that runs only on a change of resources left out is left out",
  );
});

t.test("unit: refusals name the field and line", async (t) => {
  refuse(
    t,
    `name: web\nresources:\n  - { id: a, type: file, path: /a, content: x }\n  - id: b\n    type: exec\n    command: x\n    onchanges: [a]\n`,
    "invalid_module",
    "resources[1].onchanges",
    7,
    /onchanges needs version: 2/,
  );
  refuse(
    t,
    `version: 1\nname: web\nresources:\n  - { id: a, type: file, path: /a, content: x, notify: b }\n  - { id: b, type: exec, command: x }\n`,
    "invalid_module",
    "resources[0].notify",
    4,
    /notify needs version: 2/,
  );
  refuse(
    t,
    `name: web\nresources:\n  - id: s\n    type: service\n    name: nginx\n    state: running\n    refresh: reload\n`,
    "invalid_module",
    "resources[0].refresh",
    7,
    /refresh needs version: 2/,
  );
  refuse(
    t,
    v2(
      `  - { id: a, type: file, path: /a, content: x }\n  - id: b\n    type: exec\n    command: x\n    onchanges:\n      - a\n      - ghost\n`,
    ),
    "unknown_requirement",
    "resources[1].onchanges[1]",
    10,
    /onchanges 'ghost', which is not a resource of this module/,
  );
  refuse(
    t,
    v2(`  - { id: a, type: file, path: /a, content: x, notify: [ghost] }\n`),
    "unknown_requirement",
    "resources[0].notify[0]",
    4,
    /notify 'ghost'/,
  );
  refuse(
    t,
    v2(`  - { id: a, type: file, path: /a, content: x }\n  - { id: b, type: file, path: /b, content: x, watch: a }\n`),
    "invalid_module",
    "resources[1].watch",
    5,
    /watch on a file cannot be refreshed: notify and watch work on a service .* or an exec/,
  );
  refuse(
    t,
    v2(
      `  - { id: a, type: file, path: /a, content: x, notify: [b] }\n  - { id: b, type: file, path: /b, content: x }\n`,
    ),
    "invalid_module",
    "resources[0].notify[0]",
    4,
    /notify 'b', a file, cannot be refreshed/,
  );
  refuse(
    t,
    v2(`  - { id: a, type: exec, command: x, onchanges: [a] }\n`),
    "cyclic_requires",
    "resources[0].onchanges[0]",
    4,
    /onchanges names the resource itself/,
  );
  refuse(
    t,
    v2(
      `  - { id: a, type: exec, command: x, notify: [b] }\n  - { id: b, type: exec, command: y, requires: [a], notify: [a] }\n`,
    ),
    "cyclic_requires",
    "resources[0].requires",
    4,
    /requires, onchanges, notify and watch form a cycle: a → b → a/,
  );
  refuse(
    t,
    v2(`  - { id: s, type: service, name: nginx, state: running, refresh: bounce }\n`),
    "invalid_module",
    "resources[0].refresh",
    4,
    // Every enum field of a module names its values (a template is allowed too).
    /must be one of restart, reload \(or a \{\{ template \}\}\)/,
  );
});

t.test("unit: an enforcement of a drifted trigger also re-applies what reacts to it", async (t) => {
  const parsed = parseModule(site, "web");
  const sources = [{ name: "web", parsed }];
  t.same(
    [...withReactors(sources, ["web/conf"])].sort(),
    ["web/audit", "web/conf", "web/nginx"],
    "watch and onchanges",
  );
  t.same(
    [...withReactors(sources, ["web/site"])].sort(),
    ["web/audit", "web/nginx", "web/reindex", "web/site"],
    "notify targets and onchanges",
  );
  t.same(
    [...withReactors(sources, ["web/reindex"])],
    ["web/reindex"],
    "nothing reacts to an exec that notifies nobody",
  );
  const chain = parseModule(
    v2(`  - { id: a, type: file, path: /a, content: "a" }
  - { id: b, type: exec, command: /bin/true, onchanges: a, notify: c }
  - { id: c, type: service, name: c, state: running }
`),
    "web",
  );
  t.same(
    [...withReactors([{ name: "web", parsed: chain }], ["web/a"])].sort(),
    ["web/a", "web/b", "web/c"],
    "transitively",
  );
});

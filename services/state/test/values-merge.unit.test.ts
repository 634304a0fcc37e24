import { OrchError } from "@orch/kit";
import t from "tap";
import {
  explainPath,
  layersFor,
  mergeLayers,
  mergeWithOrigins,
  prepareSets,
  type StoredSet,
  type ValueLayer,
} from "../src/values/merge.js";
import { parseValuesObject, parseValuesText } from "../src/values/parse.js";

// Values without I/O: parsing with lines and refusals (values/parse.ts), layering and the merge
// with origins (values/merge.ts). The API and the render wiring are values-api.test.ts.

const layer = (set: string, text: string, l: ValueLayer["layer"] = "set", priority = 0): ValueLayer => {
  const p = parseValuesText(text);
  return { set, layer: l, priority, values: p.values, lines: p.lines };
};

const reason = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    const e = OrchError.from(err);
    return { reason: e.reason, details: e.details as Record<string, unknown>, message: e.message };
  }
  return undefined;
};

t.test("parsing keeps typed values and the line of every leaf key", async (t) => {
  const p = parseValuesText(
    "nginx:\n  workers: 4\n  upstreams:\n    - a:80\n    - b:80\n  tls: true\nenv: prod\nempty: {}\n",
  );
  t.same(p.values, { nginx: { workers: 4, upstreams: ["a:80", "b:80"], tls: true }, env: "prod", empty: {} });
  t.same(p.lines, { "nginx.workers": 2, "nginx.upstreams": 3, "nginx.tls": 6, env: 7, empty: 8 });
  t.same(parseValuesText("").values, {});
  const j = parseValuesObject({ a: { b: [1, 2] } });
  t.same(j.values, { a: { b: [1, 2] } });
  t.equal(j.lines["a.b"], 2, "JSON values are stored as YAML text whose lines origins name");
});

t.test("bad values are refused with a stable code and the line", async (t) => {
  t.match(
    reason(() => parseValuesText("a: 1\n  b: [")),
    { reason: "invalid_values" },
  );
  t.match(
    reason(() => parseValuesText("- 1\n- 2\n")),
    { reason: "invalid_values", details: { line: 1 } },
  );
  t.match(
    reason(() => parseValuesText("ok: 1\nbad.key: 2\n")),
    {
      reason: "invalid_values",
      details: { line: 2, path: "bad.key" },
    },
  );
  t.match(
    reason(() => parseValuesText("a:\n  __proto__: 1\n")),
    { reason: "invalid_values", details: { line: 2 } },
  );
  t.match(
    reason(() => parseValuesText("a: 1\na: 2\n")),
    { reason: "invalid_values", details: { line: 2 } },
  );
  t.match(
    reason(() => parseValuesText("db:\n  password: '{{ secrets.db }}'\n")),
    {
      reason: "secret_in_values",
      details: { line: 2, path: "db.password" },
    },
  );
  t.match(
    reason(() => parseValuesText("l:\n  - x\n  - [ '{{secrets.k}}' ]\n")),
    { reason: "secret_in_values" },
  );
  t.match(
    reason(() => parseValuesObject({ a: "{{- secrets.x }}" })),
    { reason: "secret_in_values" },
  );
  t.match(
    reason(() => parseValuesObject([1])),
    { reason: "invalid_values" },
  );
  t.match(
    reason(() => parseValuesText(`a: "${"x".repeat(300 * 1024)}"`)),
    { reason: "values_too_large" },
  );
  t.equal(
    reason(() => parseValuesText("a: '{{ values.x }} and {{ attributes.y }}'\n")),
    undefined,
  );
});

t.test("maps merge at any depth; lists and scalars replace", async (t) => {
  const merged = mergeLayers([
    layer(
      "defaults",
      "nginx:\n  workers: 2\n  upstreams: [a, b, c]\n  log: {level: info, path: /var/log}\n",
      "defaults",
    ),
    layer("prod", "nginx:\n  upstreams: [p1]\n  log: {level: warn}\n", "set", 10),
  ]);
  t.same(merged, { nginx: { workers: 2, upstreams: ["p1"], log: { level: "warn", path: "/var/log" } } });
});

t.test("origins name the winning set and line and what it overrode", async (t) => {
  const layers = [
    layer("defaults", "port: 80\nnginx:\n  upstreams: [a, b]\n  workers: 2\n", "defaults"),
    layer("staging", "nginx:\n  upstreams: [s1]\n", "set", 5),
    layer("prod", "nginx:\n  upstreams: [p1, p2]\n", "set", 10),
    layer("", "port: 8080\n", "agent"),
  ];
  const { values, keys } = mergeWithOrigins(layers);
  t.same(values, { port: 8080, nginx: { upstreams: ["p1", "p2"], workers: 2 } });
  t.same(
    keys.map((k) => k.path),
    ["nginx.upstreams", "nginx.workers", "port"],
  );
  const up = keys.find((k) => k.path === "nginx.upstreams")!;
  t.match(up.origin, { set: "prod", layer: "set", priority: 10, line: 2 });
  t.same(
    up.overridden.map((o) => [o.set, o.line]),
    [
      ["defaults", 3],
      ["staging", 2],
    ],
  );
  t.match(
    keys.find((k) => k.path === "port"),
    { origin: { layer: "agent", line: 1 }, overridden: [{ set: "defaults" }] },
  );
  t.same(keys.find((k) => k.path === "nginx.workers")!.overridden, []);
});

t.test(
  "a scalar replacing a map overrides every leaf under it; a map over a scalar overrides the scalar",
  async (t) => {
    const { values, keys } = mergeWithOrigins([
      layer("defaults", "log:\n  level: info\n  path: /x\nmode: simple\n", "defaults"),
      layer("s", "log: off\nmode:\n  kind: fancy\n", "set", 1),
    ]);
    t.same(values, { log: "off", mode: { kind: "fancy" } });
    t.same(
      keys.find((k) => k.path === "log")!.overridden.map((o) => o.path),
      ["log.level", "log.path"],
    );
    t.same(
      keys.find((k) => k.path === "mode.kind")!.overridden.map((o) => `${o.set}:${o.path}`),
      ["defaults:mode"],
    );
    t.same(
      explainPath(keys, "log.level").map((k) => k.path),
      ["log"],
      "a path under a scalar is answered by the scalar",
    );
    t.same(
      explainPath(keys, "mode").map((k) => k.path),
      ["mode.kind"],
    );
  },
);

t.test("sets apply by selector in priority order, ties by name, defaults first, the agent's own last", async (t) => {
  const set = (name: string, selector: string, priority: number, text: string): StoredSet => {
    const p = parseValuesText(text);
    return { name, selector, priority, values: p.values, lines: p.lines };
  };
  const prepared = prepareSets([
    set("zz-web", "role=web", 5, "who: zz-web\n"),
    set("aa-web", "role=web", 5, "who: aa-web\n"),
    set("prod", "env=prod", 10, "who: prod\nenv: prod\n"),
    set("defaults", "", 0, "who: defaults\nenv: none\n"),
    set("db", "role=db", 50, "who: db\n"),
  ]);
  const agent = { nodeId: "n1", name: "web-1", tags: { role: "web", env: "prod" }, attributes: {} };
  const layers = layersFor(prepared, agent);
  t.same(
    layers.map((l) => l.set),
    ["defaults", "aa-web", "zz-web", "prod"],
  );
  t.same(mergeLayers(layers), { who: "prod", env: "prod" });
  const staging = { ...agent, tags: { role: "web", env: "staging" } };
  t.same(
    mergeLayers(layersFor(prepared, staging)),
    { who: "zz-web", env: "none" },
    "equal priority: the later name wins",
  );
  const own = parseValuesText("who: me\n");
  t.same(mergeLayers(layersFor(prepared, staging, own)), { who: "me", env: "none" });
  t.same(mergeLayers(layersFor(prepareSets([]), agent)), {});
});

t.test("merging never modifies the stored sets (every agent of a fan-out shares them)", async (t) => {
  const a = layer("defaults", "m:\n  x: 1\n", "defaults");
  const b = layer("s", "m:\n  y: 2\n", "set", 1);
  const before = JSON.stringify([a.values, b.values]);
  mergeLayers([a, b]);
  mergeWithOrigins([a, b]);
  t.equal(JSON.stringify([a.values, b.values]), before);
});

import t from "tap";
import { masker, noMask, renderValue, scanTemplate, TemplateError } from "../src/module/template.js";
import { storeResults } from "../src/engine/results.js";
import { renderResources, secretNames, usedInputs, type ModuleSource } from "../src/engine/render.js";
import { parseModule } from "../src/module/parse.js";

// Unit tests of template rendering and secret masking (pure logic).
const inputs = {
  attributes: { hostname: "h1", os: "linux" },
  tags: { env: "test", "team/owner": "ops" },
  secrets: new Map([["db_pass", "s3cr3t-VALUE"]]),
};

t.test("renders attributes, tags and secrets in nested strings only", async (t) => {
  const out = renderValue(
    {
      a: "host={{ attributes.hostname }}",
      b: ["{{tags.env}}", 3, true],
      c: { d: "{{ tags.team/owner }}:{{ secrets.db_pass }}" },
      e: "{{ item.x }}",
    },
    inputs,
    "m/r",
  );
  t.same(out, { a: "host=h1", b: ["test", 3, true], c: { d: "ops:s3cr3t-VALUE" }, e: "{{ item.x }}" });
});

t.test("a missing attribute or tag is a TemplateError naming it, never a value", async (t) => {
  t.throws(
    () => renderValue("{{ attributes.nope }}", inputs, "m/r"),
    new TemplateError("m/r: the agent has no attribute 'nope' ({{ attributes.nope }})"),
  );
  t.throws(() => renderValue("{{ tags.role }}", inputs, "m/r"), TemplateError);
  t.throws(() => renderValue("{{ secrets.other }}", inputs, "m/r"), /secret 'other' was not resolved/);
});

t.test("scan reports references and namespace typos", async (t) => {
  t.same(scanTemplate("{{ attributes.a }}{{secrets.b}}").refs, [
    { ns: "attributes", key: "a" },
    { ns: "secrets", key: "b" },
  ]);
  t.same(scanTemplate("{{ tag.env }}").typo, { found: "tag.env", meant: "tags" });
  t.same(scanTemplate("plain").refs, []);
});

t.test("masking replaces values, and each line of a multi-line value", async (t) => {
  const mask = masker(["s3cr3t", "line-one\nline-two\n--\n"]);
  t.equal(mask("a s3cr3t b s3cr3t"), "a *** b ***");
  t.equal(mask("-old\n+line-one\n+line-two\n+--"), "-old\n+***\n+***\n+--", "short lines of a multi-line value stay");
  t.equal(masker([""])("unchanged"), "unchanged", "empty values mask nothing");
  t.equal(masker(["abc", "abcdef"])("xabcdefx"), "x***x", "longest first");
});

t.test("resources render per agent with module-qualified requires; snapshots keep only the inputs used", async (t) => {
  const parsed = parseModule(
    "name: m\nresources:\n  - { id: f, type: file, path: /a, content: '{{ attributes.hostname }} {{ secrets.db_pass }}' }\n  - { id: g, type: exec, command: 'echo {{ tags.env }}', requires: [f] }\n",
    "m",
  );
  const src: ModuleSource = { name: "m", sha256: "x", parsed };
  t.same(secretNames([src]), ["db_pass"]);
  const r = renderResources([src], inputs, inputs.secrets);
  t.same(
    r.map((x) => [x.id, x.module, x.type, x.requires, x.spec]),
    [
      ["f", "m", "file", [], { path: "/a", content: "h1 s3cr3t-VALUE" }],
      ["g", "m", "exec", ["m/f"], { command: "echo test" }],
    ],
  );
  t.same(usedInputs(src, inputs.attributes, inputs.tags), { attributes: { hostname: "h1" }, tags: { env: "test" } });
  const drift = renderResources(
    [{ ...src, inputs: { attributes: { hostname: "old" }, tags: { env: "old" } } }],
    inputs,
    inputs.secrets,
  );
  t.equal(drift[0]!.spec!.content, "old s3cr3t-VALUE", "recorded inputs win over the agent's current ones");
});

t.test("per-module work done once still renders each agent's own values", async (t) => {
  const parsed = parseModule(
    "name: m\nresources:\n  - { id: d, type: directory, path: /srv/app }\n  - { id: f, type: file, path: /srv/app/c, content: 'host={{ attributes.hostname }}' }\n  - { id: j, type: file, path: /srv/app/j, content: '{{ item.x }}' }\n",
    "m",
  );
  const src: ModuleSource = { name: "m", sha256: "x", parsed };
  const none = new Map<string, string>();
  const a = renderResources([src], { attributes: { hostname: "a" }, tags: {} }, none);
  const b = renderResources([src], { attributes: { hostname: "b" }, tags: {} }, none);
  t.same(
    [a[1]!.spec, b[1]!.spec],
    [
      { path: "/srv/app/c", content: "host=a" },
      { path: "/srv/app/c", content: "host=b" },
    ],
  );
  t.equal(a[0]!.spec, b[0]!.spec, "a spec without templates is shared, not copied");
  t.same(a[0]!.spec, { path: "/srv/app" });
  t.same(a[2]!.spec, { path: "/srv/app/j", content: "{{ item.x }}" }, "other {{ }} text is left alone");
  t.same(usedInputs(src, { hostname: "a", os: "x" }, {}), { attributes: { hostname: "a" }, tags: {} });
  t.same(usedInputs(src, { hostname: "b" }, { env: "e" }), { attributes: { hostname: "b" }, tags: {} });
  t.same(usedInputs(src, {}, {}), { attributes: {}, tags: {} }, "a missing input is not recorded");
});

t.test("without secrets nothing is masked; with them observed values are masked", async (t) => {
  t.equal(masker([]), noMask);
  const result = {
    $typeName: "orch.v1.ResourceResult" as const,
    id: "f",
    module: "m",
    type: "file",
    status: "ok",
    changed: false,
    diff: "",
    message: "pw s3cr3t",
    durationMs: 1,
    stdout: "",
    stderr: "",
    observed: { content: "pw s3cr3t", nested: { v: ["s3cr3t"] } },
  };
  const plain = storeResults([result], masker([]));
  t.same(plain.observed.get("m/f"), result.observed);
  t.equal(plain.results[0]!.message, "pw s3cr3t");
  const masked = storeResults([result], masker(["s3cr3t"]));
  t.same(masked.observed.get("m/f"), { content: "pw ***", nested: { v: ["***"] } });
  t.equal(masked.results[0]!.message, "pw ***");
  t.same(result.observed, { content: "pw s3cr3t", nested: { v: ["s3cr3t"] } }, "the answer itself is not modified");
});

import t, { type Test } from "tap";
import { OrchError } from "@orch/kit";
import { tooOldFor } from "../src/engine/agent-features.js";
import { renderResources } from "../src/engine/render.js";
import { blobsOf } from "../src/engine/ship-blobs.js";
import { parseModule } from "../src/module/parse.js";

// The `archive` type in the module schema: what parses, each refusal with its path and line, its
// blob collected like a file's source (unknown_blob at upload, shipped before an apply), and the
// agent features it needs.

const A = `sha256:${"ab".repeat(32)}`;
const B = `sha256:${"cd".repeat(32)}`;
const mod = (resources: string) => `name: arc\nresources:\n${resources}`;
const refuse = (t: Test, content: string, path: string, line: number, message: RegExp) => {
  try {
    parseModule(content, "arc");
    t.fail(`expected a refusal at ${path}`);
  } catch (err) {
    t.type(err, OrchError);
    const e = err as OrchError;
    t.equal(e.reason, "invalid_module", e.message);
    t.equal(e.details.path, path);
    t.equal(e.details.line, line, `${path} at line ${line}`);
    t.match(e.message, message);
  }
};

t.test("archive parses; its source is collected as a blob, like a file's", async (t) => {
  const m = parseModule(
    mod(`  - id: app
    type: archive
    source: "${A}"
    path: /opt/app
    owner: app
    group: app
    clean: true
  - { id: cfg, type: file, path: /etc/app.conf, source: "${B}" }
  - { id: again, type: archive, source: "${A}", path: "/srv/{{ tags.app }}", clean: "{{ tags.clean }}" }
`),
    "arc",
  );
  t.same(
    m.resources.map((r) => [r.type, r.spec]),
    [
      ["archive", { source: A, path: "/opt/app", owner: "app", group: "app", clean: true }],
      ["file", { path: "/etc/app.conf", source: B }],
      ["archive", { source: A, path: "/srv/{{ tags.app }}", clean: "{{ tags.clean }}" }],
    ],
  );
  t.same(
    m.blobs.map((b) => [b.digest, b.path, b.line]),
    [
      [A, "resources[0].source", 5],
      [B, "resources[1].source", 10],
      [A, "resources[2].source", 11],
    ],
    "each reference, where it is written (unknown_blob names the first unstored one)",
  );

  const r = renderResources(
    [{ name: "arc", sha256: "z", parsed: m }],
    { attributes: {}, tags: { app: "x", clean: "true" } },
    new Map(),
  );
  t.same(blobsOf(r).sort(), [A, B].sort(), "shipped to the agent before an apply, each once");
});

t.test("each refusal names the field and its line", async (t) => {
  refuse(t, mod("  - { id: a, type: archive, path: /opt/app }"), "resources[0].source", 3, /is required/);
  refuse(
    t,
    mod(`  - { id: a, type: archive, path: /opt/app, source: "sha256:abc" }`),
    "resources[0].source",
    3,
    /must be/,
  );
  refuse(t, mod(`  - { id: a, type: archive, source: "${A}" }`), "resources[0].path", 3, /is required/);
  refuse(
    t,
    mod(`  - { id: a, type: archive, path: opt/app, source: "${A}" }`),
    "resources[0].path",
    3,
    /absolute path/,
  );
  refuse(t, mod(`  - { id: a, type: archive, path: /, source: "${A}" }`), "resources[0].path", 3, /must not be \//);
  refuse(t, mod(`  - { id: a, type: archive, path: /opt/../etc, source: "${A}" }`), "resources[0].path", 3, /'\.\.'/);
  refuse(
    t,
    mod(`  - { id: a, type: archive, path: /opt/app, source: "${A}", clean: maybe }`),
    "resources[0].clean",
    3,
    /literal value/,
  );
  refuse(
    t,
    mod(`  - { id: a, type: archive, path: /opt/app, source: "${A}", mode: "0755" }`),
    "resources[0].mode",
    3,
    /unknown field .mode./,
  );
});

t.test("an archive goes only to an agent with blobs and the archive type (agent_too_old)", async (t) => {
  const m = parseModule(mod(`  - { id: app, type: archive, path: /opt/app, source: "${A}" }\n`), "arc");
  const r = renderResources([{ name: "arc", sha256: "z", parsed: m }], { attributes: {}, tags: {} }, new Map());
  const agent = (features: string) => ({ name: "web-1", nodeId: "n1", attributes: { state_features: features } });
  t.match(tooOldFor(r, agent("triggers")), /does not support archive sources \(used by arc\/app\)/);
  t.match(tooOldFor(r, agent("triggers,blobs")), /does not support archive resources \(used by arc\/app\)/);
  t.equal(tooOldFor(r, agent("triggers,blobs,archive")), undefined);
});

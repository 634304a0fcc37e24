import t from "tap";
import { sealDiff } from "@orch/contracts";
import { parseModule } from "../src/module/parse.js";
import { onPaths, renderResources, secretPaths, type ModuleSource } from "../src/engine/render.js";
import { storeResults } from "../src/engine/results.js";
import { noMask } from "../src/module/template.js";

// The state service's own sealing (defence in depth): it works out from an agent's snapshot which
// files a secret was written to, and stores a content resource on one without content even when
// the agent sent a full diff (an agent that lost its data directory, or an older one).

const source = (name: string, yaml: string, tags: Record<string, string> = {}): ModuleSource => {
  const parsed = parseModule(yaml, name);
  return { name, sha256: name, parsed, inputs: { attributes: { hostname: "web-1" }, tags } };
};
const agent = { attributes: { hostname: "web-1" }, tags: { app: "shop" } };

t.test("the paths of a snapshot's secret-bearing resources, rendered with its inputs", async (t) => {
  const snap = [
    source(
      "alice",
      [
        "name: alice",
        "resources:",
        '  - { id: f, type: file, path: "/srv/{{ tags.app }}//app.conf", content: "pw={{ secrets.db }}" }',
        '  - { id: l, type: line, path: /etc/l.conf, line: "pw={{ secrets.db }}" }',
        '  - { id: e, type: exec, script: "true", env: { T: "{{ secrets.db }}" }, creates: /var/lib/t }',
        "  - { id: plain, type: file, path: /etc/plain.conf, content: x }",
        '  - { id: missing, type: file, path: "/srv/{{ tags.nope }}", content: "{{ secrets.db }}" }',
      ].join("\n"),
      { app: "shop" },
    ),
  ];
  // A path that cannot be rendered (a tag the agent no longer has) is left out, not an error.
  t.same([...secretPaths(snap, agent)].sort(), ["/etc/l.conf", "/srv/shop/app.conf", "/var/lib/t"]);
});

t.test("a content resource on a sealed path is stored without content, whatever the agent sent", async (t) => {
  const bob = source(
    "bob",
    [
      "name: bob",
      "resources:",
      "  - { id: f, type: file, path: /srv/shop/app.conf/, content: x }",
      "  - { id: other, type: file, path: /srv/shop/other.conf, content: x }",
      "  - { id: e, type: exec, command: cat /srv/shop/app.conf }",
    ].join("\n"),
  );
  const rendered = renderResources([bob], agent, new Map());
  const sealed = onPaths(rendered, new Set(["/srv/shop/app.conf"]));
  t.same([...sealed], ["bob/f"], "a trailing slash names the same file; an exec is not a content resource");
  const unified =
    "# mode 0644 -> 0600\n--- /srv/shop/app.conf\n+++ /srv/shop/app.conf\n@@ -1 +1 @@\n-pw=hunter22\n+x\n";
  const base = { $typeName: "orch.v1.ResourceResult" as const, module: "bob", type: "file", status: "changed" };
  const result = (id: string) => ({
    ...base,
    id,
    changed: true,
    diff: unified,
    message: "",
    durationMs: 1,
    stdout: "",
    stderr: "",
    observed: { exists: true, sha256: "ab".repeat(32), size: 12, mode: "0600" },
  });
  const stored = storeResults([result("f"), result("other")], noMask, sealed);
  const [f, other] = stored.results;
  t.equal(f!.diff, "# mode 0644 -> 0600\ncontent changed (not shown: the file holds content rendered from a secret)\n");
  t.same(stored.observed.get("bob/f"), { exists: true, size: 12, mode: "0600", sealed: true });
  t.equal(other!.diff, unified, "a file on another path keeps its diff");
  t.equal(stored.observed.get("bob/other")!.sha256, "ab".repeat(32));
});

t.test("sealing is idempotent: the agent's sealed line with sizes is kept as it is", async (t) => {
  const agentSealed =
    "# create file (mode 0600)\ncontent (none) -> 12 bytes (not shown: the file holds content rendered from a secret)\n";
  t.equal(sealDiff(agentSealed), agentSealed);
  t.equal(sealDiff(""), "");
});

import t from "tap";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startStack } from "./harness.js";

// A version-2 module through the real state service to real agent providers: values layered per
// environment, a loop and a condition rendered into a file on each agent, a template error failing
// the operation before anything is written, and a drift check rendering what was applied.
const s = await startStack(t);
const dir = s.tempDir();
const prod = await s.addAgent({ name: "web-1", tags: { env: "prod" } });
const staging = await s.addAgent({ name: "web-2", tags: { env: "staging" } });

const SITE = [
  "version: 2",
  "name: site",
  "resources:",
  `  - { id: dir, type: directory, path: "${dir}/{{ agent.name }}" }`,
  "  - id: conf",
  "    type: file",
  `    path: "${dir}/{{ agent.name }}/upstreams.conf"`,
  "    requires: [dir]",
  "    content: |",
  "      # {{ agent.name }} ({{ tags.env }})",
  "      upstream app {",
  "      {% for u in values.upstreams %}  server {{ u }}:{{ values.port }};",
  "      {% endfor %}}",
  "      {% if tags.env == 'prod' %}ssl on;{% else %}ssl off;{% endif %}",
  "",
].join("\n");

const put = async (path: string, body: unknown) => {
  const r = await s.api("PUT", path, body);
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
};
await put("/values/defaults", { values: { upstreams: ["10.0.0.1", "10.0.0.2"], port: 8080 } });
await put("/values/prod", {
  selector: "env=prod",
  priority: 10,
  values: { upstreams: ["10.1.0.1", "10.1.0.2", "10.1.0.3"] },
});

const upload = (name: string, content: string) => s.api("POST", "/modules", { name, content });
const apply = (node: string, modules: string[]) => s.api("POST", `/agents/${node}/apply?wait=30`, { modules });
const conf = (name: string) => readFileSync(join(dir, name, "upstreams.conf"), "utf8");

t.test("a loop and a condition over values render into a file on each real agent", async (t) => {
  const r = await upload("site", SITE);
  t.equal(r.status, 201, r.text);
  for (const node of [prod, staging]) t.equal((await apply(node, ["site"])).body.status, "succeeded");
  t.equal(
    conf("web-1"),
    "# web-1 (prod)\nupstream app {\n  server 10.1.0.1:8080;\n  server 10.1.0.2:8080;\n  server 10.1.0.3:8080;\n}\nssl on;\n",
  );
  t.equal(
    conf("web-2"),
    "# web-2 (staging)\nupstream app {\n  server 10.0.0.1:8080;\n  server 10.0.0.2:8080;\n}\nssl off;\n",
  );
  const again = await apply(prod, ["site"]);
  t.same(
    again.body.results.map((x: { status: string }) => x.status),
    ["ok", "ok"],
    "a second apply changes nothing",
  );
});

t.test("a drift check renders with the values the apply used", async (t) => {
  const snap = await s.state.deps.pool.query<{ used_values: unknown; parameters: unknown }>(
    "SELECT used_values, parameters FROM snapshots WHERE node_id = $1 AND module = 'site'",
    [prod],
  );
  t.same(
    snap.rows[0],
    { used_values: { upstreams: ["10.1.0.1", "10.1.0.2", "10.1.0.3"], port: 8080 }, parameters: {} },
    "the snapshot keeps the values keys the templates read",
  );
  await put("/values/prod", { selector: "env=prod", priority: 10, values: { upstreams: ["10.9.9.9"] } });
  const check = await s.api("POST", `/agents/${prod}/drift?wait=30`);
  t.equal(check.status, 200, check.text);
  t.equal(check.body.drift.drifted, false, "changed values are not drift: the snapshot keeps what was applied");
  const plan = await s.api("POST", `/agents/${prod}/plan?wait=30`, { modules: ["site"] });
  t.match(
    plan.body.results.find((x: { id: string }) => x.id === "conf")?.diff,
    /^\+ {2}server 10\.9\.9\.9:8080;$/m,
    "a plan renders the current values",
  );
});

t.test("upload refuses a bad template with its line; nothing is stored", async (t) => {
  const bad = await upload("broken", SITE.replace("name: site", "name: broken").replace("{% endfor %}}", "}"));
  t.equal(bad.status, 400);
  t.equal(bad.body.code, "invalid_template");
  t.match(
    bad.body.detail,
    /resources\[1\]\.content \(line 9\): template line 3.*for.*not closed \(line 12 of the module\)/,
  );
  t.equal((await s.api("GET", "/modules/broken")).status, 404);
});

t.test("a render error fails the operation before anything is sent", async (t) => {
  const content = SITE.replace("name: site", "name: missing").replace("values.port", "values.no_such_port");
  t.equal((await upload("missing", content)).status, 201, "an unknown values key is only known per agent");
  const r = await apply(staging, ["missing"]);
  t.equal(r.body.status, "failed");
  t.equal(r.body.error_code, "template_error");
  t.match(r.body.error, /^missing\/conf: field 'content' template line 3: undefined variable: values\.no_such_port/);
  t.same(r.body.results ?? [], [], "no resource reached the agent");
  t.ok(existsSync(join(dir, "web-2", "upstreams.conf")), "(the earlier file is untouched)");
});

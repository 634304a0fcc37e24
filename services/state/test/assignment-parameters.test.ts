import t from "tap";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "@orch/kit/testing";
import { startStack } from "./harness.js";

// Module parameters through the gateway and the real state service: declarations refused at
// upload with their line, an assignment's parameters checked against its modules' declarations at
// create and update (each refusal a stable code, nothing stored), a module upload that would
// break an assignment refused, audit events naming parameters but never their values, and two
// assignments of one module rendering two sites on a real agent.
const s = await startStack(t);
const dir = s.tempDir();

const webapp = (extra: string[] = []) =>
  [
    "version: 2",
    "name: webapp",
    "parameters:",
    "  site_name: { type: string, required: true, description: the site's host name }",
    "  port: { type: integer, default: 8080 }",
    "  upstreams: { type: list, default: [127.0.0.1] }",
    ...extra,
    "resources:",
    "  - id: site",
    "    type: file",
    `    path: "${dir}/{{ parameters.site_name }}.conf"`,
    "    content: |",
    "      server_name {{ parameters.site_name }};",
    "      listen {{ parameters.port }};",
    "      {% for u in parameters.upstreams -%}",
    "      upstream {{ u }};",
    "      {% endfor -%}",
    "",
  ].join("\n");
const plain =
  "name: plain\nresources:\n  - { id: motd, type: file, path: /tmp/orch-never-applied/motd, content: hi }\n";

const rows = async () =>
  (await s.state.deps.pool.query("SELECT name, parameters FROM assignments ORDER BY name")).rows as Array<{
    name: string;
    parameters: Record<string, unknown>;
  }>;

t.before(async () => {
  for (const [name, content] of [
    ["webapp", webapp()],
    ["plain", plain],
  ]) {
    const r = await s.api("POST", "/modules", { name, content });
    if (r.status !== 201) throw new Error(`upload ${name}: ${r.text}`);
  }
});

t.test("a v1 module with parameters, and bad declarations, are 400 invalid_module with the line", async (t) => {
  const v1 = await s.api("POST", "/modules", {
    name: "old",
    content: "name: old\nparameters:\n  port: { type: integer }\nresources: []\n",
  });
  t.equal(v1.status, 400);
  t.equal(v1.body.code, "invalid_module");
  t.equal(v1.body.line, 2);
  t.match(v1.body.detail, /parameters need version: 2/);

  const badType = await s.api("POST", "/modules", {
    name: "webapp",
    content: webapp(["  debug: { type: bool }"]),
  });
  t.equal(badType.status, 400);
  t.equal(badType.body.code, "invalid_module");
  t.equal(badType.body.line, 7);
  t.match(badType.body.detail, /unknown parameter type 'bool'/);
  t.equal((await s.api("GET", "/modules/old")).status, 404, "nothing stored");
});

t.test("create with parameters: stored, returned by get and list; none given is {}", async (t) => {
  const r = await s.api("POST", "/assignments", {
    name: "site-a",
    selector: "role=web",
    modules: ["webapp", "plain"],
    parameters: { site_name: "a.example", port: 81 },
  });
  t.equal(r.status, 201, r.text);
  t.same(r.body.parameters, { site_name: "a.example", port: 81 });
  t.same((await s.api("GET", "/assignments/site-a")).body.parameters, { site_name: "a.example", port: 81 });

  const none = await s.api("POST", "/assignments", { name: "plain-only", selector: "*", modules: ["plain"] });
  t.equal(none.status, 201, none.text);
  t.same(none.body.parameters, {});
  const list = await s.api("GET", "/assignments");
  t.same(
    list.body.assignments.map((a: { name: string; parameters: unknown }) => [a.name, a.parameters]),
    [
      ["plain-only", {}],
      ["site-a", { site_name: "a.example", port: 81 }],
    ],
  );

  const templated = await s.api("POST", "/assignments", {
    name: "site-t",
    selector: "role=web",
    modules: ["webapp"],
    parameters: { site_name: "t.example", port: "{{ values.port }}" },
  });
  t.equal(templated.status, 201, "a template stands for any type until it is rendered");
  t.equal((await s.api("DELETE", "/assignments/site-t")).status, 204);
});

t.test("each bad parameter is a 400 with its stable code, and nothing is stored", async (t) => {
  const before = await rows();
  const cases: Array<[string, unknown, string, RegExp]> = [
    [
      "unknown",
      { site_name: "b", prot: 80 },
      "unknown_parameter",
      /parameter 'prot' is declared by none of the assignment's modules \(webapp\)/,
    ],
    ["missing", { port: 80 }, "missing_parameter", /module webapp requires parameter 'site_name' \(string\)/],
    [
      "wrong type",
      { site_name: "b", port: "eighty" },
      "invalid_parameter",
      /parameter 'port' must be an integer .*not a string/,
    ],
    ["list expected", { site_name: "b", upstreams: "x,y" }, "invalid_parameter", /'upstreams' must be a list/],
    [
      "a template that cannot render",
      { site_name: "{{ values.site | nosuchfilter }}" },
      "invalid_parameter",
      /parameter 'site_name' is a template that cannot render: template line 1, column \d+: .*nosuchfilter/,
    ],
    [
      "a template reading a secret",
      { site_name: "{{ secrets.db_password }}" },
      "invalid_parameter",
      /parameter 'site_name' is a template that cannot render: .*secrets/,
    ],
  ];
  for (const [what, parameters, code, detail] of cases) {
    const r = await s.api("POST", "/assignments", { name: "site-b", selector: "*", modules: ["webapp"], parameters });
    t.equal(r.status, 400, what);
    t.equal(r.body.code, code, what);
    t.match(r.body.detail, detail, what);
  }
  const v1Only = await s.api("POST", "/assignments", {
    name: "site-b",
    selector: "*",
    modules: ["plain"],
    parameters: { port: 1 },
  });
  t.equal(v1Only.body.code, "unknown_parameter", "a v1 module declares none");
  const notMap = await s.api("POST", "/assignments", {
    name: "site-b",
    selector: "*",
    modules: ["webapp"],
    parameters: ["site_name"],
  });
  t.equal(notMap.status, 400, "a list is not a parameter map");
  t.same(await rows(), before, "nothing stored");
  t.equal((await s.api("GET", "/assignments/site-b")).status, 404);
});

t.test("update replaces parameters, validated the same way; a refused update changes nothing", async (t) => {
  const put = (body: object) => s.api("PUT", "/assignments/site-a", { selector: "role=web", ...body });
  const bad = await put({ modules: ["webapp"], parameters: { site_name: "a.example", port: 1.5 } });
  t.equal(bad.status, 400);
  t.equal(bad.body.code, "invalid_parameter");
  const missing = await put({ modules: ["webapp"] });
  t.equal(missing.body.code, "missing_parameter", "absent parameters are none: the required one is missing");
  t.same((await s.api("GET", "/assignments/site-a")).body.parameters, { site_name: "a.example", port: 81 });

  const ok = await put({ modules: ["webapp"], parameters: { site_name: "a.example", upstreams: ["10.0.0.1"] } });
  t.equal(ok.status, 200, ok.text);
  t.same(ok.body.parameters, { site_name: "a.example", upstreams: ["10.0.0.1"] });

  await eventually(async () => (await s.events("assignment.updated")).some((e) => e.target?.name === "site-a"));
  const upd = (await s.events("assignment.updated")).find((e) => e.target?.name === "site-a")!;
  t.match(upd.summary, /parameters port, upstreams changed/);
  t.same(upd.metadata?.parameters_changed, ["port", "upstreams"]);
  t.notMatch(JSON.stringify(upd), /10\.0\.0\.1/, "values are not in the audit event");
  const created = (await s.events("assignment.created")).find((e) => e.target?.name === "site-a")!;
  t.match(created.summary, /parameters port, site_name\)/);
  t.notMatch(JSON.stringify(created), /a\.example/);
});

t.test("an upload that would break an assignment's parameters is 409 naming it; the module stays", async (t) => {
  const sha = (await s.api("GET", "/modules/webapp")).body.sha256;
  const required = await s.api("POST", "/modules", {
    name: "webapp",
    content: webapp(["  tls_cert: { type: string, required: true }"]),
  });
  t.equal(required.status, 409);
  t.equal(required.body.code, "module_breaks_assignments");
  t.same(required.body.assignments, ["site-a"]);
  t.match(required.body.detail, /site-a: module webapp requires parameter 'tls_cert'/);

  const retyped = await s.api("POST", "/modules", {
    name: "webapp",
    content: webapp().replace("upstreams: { type: list, default: [127.0.0.1] }", "upstreams: { type: string }"),
  });
  t.equal(retyped.body.code, "module_breaks_assignments", "a type the given value no longer suits");
  t.equal((await s.api("GET", "/modules/webapp")).body.sha256, sha, "not replaced");

  const optional = await s.api("POST", "/modules", {
    name: "webapp",
    content: webapp(["  tls: { type: boolean, default: false }"]),
  });
  t.equal(optional.status, 201, "a new optional parameter breaks nothing");
});

t.test("one module, two assignments, two sites rendered on a real agent", async (t) => {
  await s.addAgent({ name: "web-1", tags: { role: "web" } });
  t.equal(
    (
      await s.api("POST", "/assignments", {
        name: "site-b",
        selector: "role=web",
        modules: ["webapp"],
        parameters: { site_name: "b.example", port: 82, upstreams: ["10.0.0.2", "10.0.0.3"] },
      })
    ).status,
    201,
  );
  for (const name of ["site-a", "site-b"]) {
    const r = await s.api("POST", `/assignments/${name}/apply?wait=120`);
    t.equal(r.body.status, "completed", `${name}: ${r.text}`);
    t.equal(r.body.failures, 0, name);
  }
  t.equal(
    readFileSync(join(dir, "a.example.conf"), "utf8"),
    "server_name a.example;\nlisten 8080;\nupstream 10.0.0.1;\n",
  );
  t.equal(
    readFileSync(join(dir, "b.example.conf"), "utf8"),
    "server_name b.example;\nlisten 82;\nupstream 10.0.0.2;\nupstream 10.0.0.3;\n",
  );
});

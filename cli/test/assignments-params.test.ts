import t from "tap";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ServerResponse } from "node:http";
import { cli } from "./helpers/cli.js";
import { loggedIn } from "./helpers/setup.js";

// orchctl assignments create/update/show with parameters against the in-test API: --param values
// read as YAML (numbers, lists, templates kept as text), --params-file under them, update keeping
// the parameters it is not told to change, and show printing them.
const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};
const stored = (parameters: Record<string, unknown>) => ({
  name: "site",
  selector: "role=web",
  modules: ["webapp"],
  description: null,
  created_at: "2026-01-01T00:00:00.000Z",
  created_by: "01J0000000000000000000000A",
  enforce: false,
  source: null,
  commit: null,
  apply_on_sync: false,
  sync_batch: null,
  sync_max_failures: null,
  parameters,
});

t.test("create --param reads YAML values; --params-file is the base they apply over", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("POST /api/v1/assignments", (_req, res) =>
    json(res, 201, { ...stored({}), ...(w.server.requests.at(-1)!.body as object) }),
  );
  // Not t.testdir: loggedIn keeps the CLI's config there.
  const dir = mkdtempSync(join(tmpdir(), "orchctl-params-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, "params.yaml");
  writeFileSync(file, "site_name: from-file.example\nport: 1\ntls: { cert: /etc/c.pem }\n");
  const r = await cli(
    [
      "--json",
      "assignments",
      "create",
      "site",
      "--selector",
      "role=web",
      "-m",
      "webapp",
      "--params-file",
      file,
      "--param",
      "port=8080",
      "--param",
      "hosts=[a, b]",
      "--param",
      "debug=true",
      "--param",
      "name=a b",
      "--param",
      "quoted='8080'",
      "--param",
      "tmpl={{ values.port }}",
      "--param",
      "empty=",
      "--param",
      "block=a: b",
    ],
    w.env,
  );
  t.equal(r.code, 0, r.stderr);
  const body = w.server.requests.filter((q) => q.method === "POST").at(-1)!.body as { parameters: unknown };
  t.same(body.parameters, {
    site_name: "from-file.example",
    port: 8080,
    tls: { cert: "/etc/c.pem" },
    hosts: ["a", "b"],
    debug: true,
    name: "a b",
    quoted: "8080",
    tmpl: "{{ values.port }}",
    empty: "",
    block: "a: b",
  });
  t.same(JSON.parse(r.stdout).parameters.port, 8080, "--json prints the assignment");

  const bad = await cli(["assignments", "create", "x", "--selector", "*", "-m", "webapp", "--param", "novalue"], w.env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /--param "novalue" is not name=value/);
  const noFile = await cli(
    ["assignments", "create", "x", "--selector", "*", "-m", "webapp", "--params-file", join(dir, "nope")],
    w.env,
  );
  t.equal(noFile.code, 1);
  t.match(noFile.stderr, /cannot read --params-file/);
});

t.test("update keeps the parameters not named, sets --param, drops --unset-param", async (t) => {
  const w = await loggedIn(t);
  let current = stored({ site_name: "a.example", port: 81, hosts: ["x"] });
  w.server.overrides.set("GET /api/v1/assignments/site", (_req, res) => json(res, 200, current));
  w.server.overrides.set("PUT /api/v1/assignments/site", (_req, res) => {
    current = { ...current, ...(w.server.requests.at(-1)!.body as object) };
    json(res, 200, current);
  });
  const puts = () => w.server.requests.filter((r) => r.method === "PUT").map((r) => r.body);

  const sel = await cli(["assignments", "update", "site", "--selector", "role=api"], w.env);
  t.equal(sel.code, 0, sel.stderr);
  const set = await cli(["assignments", "update", "site", "--param", "port=82", "--unset-param", "hosts"], w.env);
  t.equal(set.code, 0, set.stderr);
  t.same(puts(), [
    {
      selector: "role=api",
      modules: ["webapp"],
      description: null,
      parameters: { site_name: "a.example", port: 81, hosts: ["x"] },
    },
    { selector: "role=api", modules: ["webapp"], description: null, parameters: { site_name: "a.example", port: 82 } },
  ]);

  const show = await cli(["assignments", "show", "site"], w.env);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /^parameters: +port=82, site_name=a\.example$/m);
});

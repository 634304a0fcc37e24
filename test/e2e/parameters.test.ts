import t from "tap";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "@orch/kit/testing";
import { run } from "../../cli/src/program.js";
import { startStateStack } from "./lib/state-stack.js";

// One version-2 module, two sites: `orchctl assignments create --param` gives the same `webapp`
// module two site names, and a real orch-agent (its own process, over the agent link) writes two
// different files from it. Real services, Postgres and NATS; orchctl runs in-process.
const { linkPort, system, agents, dir } = await startStateStack(t, { name: "parameters", keyByte: 5 });

const env = { HOME: dir, ORCHCTL_HOME: join(dir, "home"), ORCH_URL: system.url };
async function orchctl(args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env,
  });
  return { code, stdout, stderr };
}
const pem = join(dir, "admin.pem");
writeFileSync(pem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const login = await orchctl(["login", "--key", pem]);
if (login.code !== 0) throw new Error(login.stderr);

const token = await system.login(system.admin);
const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--no-terminal"]);
const nodeId = await proc.nodeId();
await eventually(
  async () => (await system.api("GET", `/api/v1/agents/${nodeId}`, { token })).body?.connected === true,
  20_000,
);
await system.api("POST", `/api/v1/agents/${nodeId}`, { token, body: { status: "approved", name: "web-1" } });
await system.api("PUT", `/api/v1/agents/${nodeId}/tags`, { token, body: { tags: { role: "web" } } });

const moduleFile = join(dir, "webapp.yaml");
writeFileSync(
  moduleFile,
  [
    "version: 2",
    "name: webapp",
    "parameters:",
    "  site_name: { type: string, required: true }",
    "  port: { type: integer, default: 8080 }",
    "  upstreams: { type: list, default: [127.0.0.1] }",
    "resources:",
    "  - id: site",
    "    type: file",
    `    path: "${dir}/{{ parameters.site_name }}.conf"`,
    "    content: |",
    "      server_name {{ parameters.site_name }}; listen {{ parameters.port }};",
    "      {% for u in parameters.upstreams -%}",
    "      upstream {{ u }};",
    "      {% endfor -%}",
    "",
  ].join("\n"),
);

t.test("two assignments of one module render two sites on a real agent", async (t) => {
  const push = await orchctl(["modules", "push", moduleFile]);
  t.equal(push.code, 0, push.stderr);
  const a = await orchctl([
    "assignments",
    "create",
    "site-a",
    "--selector",
    "role=web",
    "-m",
    "webapp",
    "--param",
    "site_name=a.example",
  ]);
  t.equal(a.code, 0, a.stderr);
  const b = await orchctl([
    "assignments",
    "create",
    "site-b",
    "--selector",
    "role=web",
    "-m",
    "webapp",
    "--param",
    "site_name=b.example",
    "--param",
    "port=8081",
    "--param",
    "upstreams=[10.0.0.2, 10.0.0.3]",
  ]);
  t.equal(b.code, 0, b.stderr);
  const missing = await orchctl(["assignments", "create", "site-c", "--selector", "role=web", "-m", "webapp"]);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /module webapp requires parameter 'site_name' \(string\).*\(missing_parameter\)/);
  const wrong = await orchctl([
    "assignments",
    "create",
    "site-c",
    "--selector",
    "role=web",
    "-m",
    "webapp",
    "--param",
    "site_name=c",
    "--param",
    "port=80.5",
  ]);
  t.match(wrong.stderr, /'port' must be an integer.*\(invalid_parameter\)/);

  const show = await orchctl(["assignments", "show", "site-b"]);
  t.match(show.stdout, /^parameters: +port=8081, site_name=b\.example, upstreams=\["10\.0\.0\.2","10\.0\.0\.3"\]$/m);

  for (const name of ["site-a", "site-b"]) {
    const r = await orchctl(["assignments", "apply", name]);
    t.equal(r.code, 0, `${name}: ${r.stderr}${r.stdout}`);
  }
  t.equal(
    readFileSync(join(dir, "a.example.conf"), "utf8"),
    "server_name a.example; listen 8080;\nupstream 127.0.0.1;\n",
  );
  t.equal(
    readFileSync(join(dir, "b.example.conf"), "utf8"),
    "server_name b.example; listen 8081;\nupstream 10.0.0.2;\nupstream 10.0.0.3;\n",
  );

  const update = await orchctl(["assignments", "update", "site-a", "--param", "port=9090"]);
  t.equal(update.code, 0, update.stderr);
  t.equal((await orchctl(["assignments", "apply", "site-a"])).code, 0);
  t.match(readFileSync(join(dir, "a.example.conf"), "utf8"), /listen 9090;/);
});

// Secret exposure and `..` paths through the gateway with the real secrets and state services and the real
// agent providers: a secret cannot be put where /proc shows it, read back through an encoding,
// hashed into an oracle, or widened by an operator; a literal '..' path is refused at upload.
import t from "tap";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { OrchError } from "@orch/kit";
import { ed25519 } from "@orch/kit/testing";
import { call, login } from "../../gateway/test/harness.js";
import { parseModule } from "../src/module/parse.js";
import { startStack } from "./harness.js";

const s = await startStack(t);
const dir = s.tempDir();
const web1 = await s.addAgent({ name: "web-1", tags: { env: "test" } });
const SECRET = "S3cr3t-value/with spaces&more";
await s.createSecret("token", SECRET);

const mod = (name: string, ...resources: string[]) => [`name: ${name}`, "resources:", ...resources, ""].join("\n");
const count = async () => Number((await s.state.deps.pool.query("SELECT count(*) FROM state.modules")).rows[0].count);
const run = (kind: "apply" | "plan", modules: string[]) =>
  s.api("POST", `/agents/${web1}/${kind}?wait=30`, { modules });

t.test("a secret in a field that becomes a process argument is refused at upload, naming the field", async (t) => {
  const before = await count();
  const T = "{{ secrets.token }}";
  const cases: Array<[string, string, string, number]> = [
    ["exec command", `  - { id: x, type: exec, command: "printf %s '${T}' | base64" }`, "resources[0].command", 3],
    ["exec unless", `  - id: g\n    type: exec\n    command: "true"\n    unless: "${T}"`, "resources[0].unless", 6],
    ["exec onlyif", `  - { id: g, type: exec, command: ok, onlyif: "{{secrets.token}}" }`, "resources[0].onlyif", 3],
    ["user comment", `  - { id: u, type: user, name: app, comment: "pw ${T}" }`, "resources[0].comment", 3],
    ["package version", `  - { id: p, type: package, name: app, version: "${T}" }`, "resources[0].version", 3],
  ];
  for (const [what, resource, path, line] of cases) {
    const r = await s.api("POST", "/modules", { name: "leaky", content: mod("leaky", resource) });
    t.equal(r.status, 400, what);
    t.match(r.type, /problem\+json/);
    t.equal(r.body.code, "secret_in_argument", what);
    t.equal(r.body.path, path, `${what}: names the field`);
    t.equal(r.body.line, line, `${what}: names the line`);
    t.match(r.body.detail, new RegExp(`^${path.replace(/[[\].]/g, "\\$&")} \\(line ${line}\\)`));
    if (what.startsWith("exec")) t.match(r.body.detail, /through env/, "tells the user to pass it through env");
  }
  t.equal(await count(), before, "nothing stored");
  // The ways that are allowed: env, script, file content, attributes/tags in a command.
  const ok = parseModule(
    mod(
      "fine",
      '  - { id: e, type: exec, command: "printf %s \\"$TOKEN\\" | wc -c", env: { TOKEN: "{{ secrets.token }}" } }',
      '  - { id: sc, type: exec, script: "echo {{ secrets.token }} > /dev/null" }',
      '  - { id: f, type: file, path: /etc/app.conf, content: "token={{ secrets.token }}" }',
      '  - { id: a, type: exec, command: "echo {{ attributes.hostname }}" }',
    ),
  );
  t.equal(ok.resources.length, 4);
});

t.test("a literal '..' path is refused at upload", async (t) => {
  for (const [resource, path] of [
    ["  - { id: f, type: file, path: /srv/app/../../etc/shadow, content: x }", "resources[0].path"],
    ['  - { id: f, type: file, path: "/srv/{{ tags.app }}/../x", content: x }', "resources[0].path"],
    ["  - { id: l, type: symlink, path: /srv/l, target: ../../etc/shadow }", "resources[0].target"],
  ] as const) {
    try {
      parseModule(mod("dots", resource));
      t.fail("expected a refusal");
    } catch (err) {
      t.type(err, OrchError);
      t.equal((err as OrchError).reason, "invalid_module");
      t.equal((err as OrchError).details.path, path);
      t.match((err as OrchError).message, /must not contain '\.\.' segments/);
    }
  }
});

t.test("output of an operation that received a secret is redacted in its common encodings", async (t) => {
  const node = JSON.stringify(process.execPath);
  const script = [
    'printf "plain:%s\\n" "$TOKEN"',
    'printf "b64:%s\\n" "$(printf %s "$TOKEN" | base64 -w0)"',
    'printf "b64-shifted:%s\\n" "$(printf "x%s" "$TOKEN" | base64 -w0)"',
    'printf "hex:%s\\n" "$(printf %s "$TOKEN" | od -An -tx1 -v | tr -d " \\n")"',
    'printf "rev:%s\\n" "$(printf %s "$TOKEN" | rev)"',
    `printf "url:%s\\n" "$(${node} -e 'process.stdout.write(encodeURIComponent(process.env.TOKEN))')"`,
    'printf "err:%s\\n" "$(printf %s "$TOKEN" | base64 -w0 | tr "+/" "-_" | tr -d =)" >&2',
  ].join("\n");
  const env = `    env: { TOKEN: "{{ secrets.token }}" }`;
  const resource = `  - id: show\n    type: exec\n    script: ${JSON.stringify(script)}\n${env}`;
  const r = await s.api("POST", "/modules", { name: "reader", content: mod("reader", resource) });
  t.equal(r.status, 201, r.text);
  const op = await run("apply", ["reader"]);
  t.equal(op.body.status, "succeeded", op.text);
  const out = await s.api("GET", `/agents/${web1}/state/operations/${op.body.id}/output`);
  const { stdout, stderr } = out.body.outputs[0];
  const lines = Object.fromEntries(
    (stdout as string)
      .trim()
      .split("\n")
      .map((l) => [l.split(":")[0], l.slice(l.indexOf(":") + 1)]),
  );
  t.same(Object.keys(lines), ["plain", "b64", "b64-shifted", "hex", "rev", "url"], "the script ran every line");
  for (const k of ["plain", "b64", "hex", "rev", "url"]) t.equal(lines[k], "***", `${k} redacted`);
  const shifted = lines["b64-shifted"]!;
  t.ok(shifted.includes("***") && shifted.length <= 3 + 6, `unaligned base64 redacted: ${shifted}`);
  t.equal(stderr, "err:***\n", "base64url without padding on stderr redacted");
  const b = Buffer.from(SECRET);
  const reversed = [...SECRET].reverse().join("");
  const url = encodeURIComponent(SECRET);
  const forms = [SECRET, b.toString("base64"), b.toString("hex"), reversed, url, b.toString("base64url")];
  t.notOk(
    forms.some((f) => out.text.includes(f)),
    "no form in the response",
  );
  const dump = await s.dumpStateSchema();
  t.notOk(
    forms.some((f) => dump.includes(f)),
    "no form stored",
  );
});

t.test("believed state exposes no plain hash of content rendered with a secret", async (t) => {
  const content = `token=${SECRET}\n`;
  const plain = "no secret here\n";
  const r = await s.api("POST", "/modules", {
    name: "conf",
    content: mod(
      "conf",
      `  - id: secret-file\n    type: file\n    path: ${join(dir, "secret.conf")}\n    mode: "0600"`,
      `    content: ${JSON.stringify("token={{ secrets.token }}\n")}`,
      `  - { id: plain-file, type: file, path: ${join(dir, "plain.conf")}, content: ${JSON.stringify(plain)} }`,
    ),
  });
  t.equal(r.status, 201, r.text);
  const op = await run("apply", ["conf"]);
  t.equal(op.body.status, "succeeded", op.text);
  t.equal(readFileSync(join(dir, "secret.conf"), "utf8"), content, "the agent wrote the secret");
  const hash = createHash("sha256").update(content).digest("hex");
  const believed = await s.api("GET", `/agents/${web1}/state`);
  t.equal(believed.status, 200);
  const byId = Object.fromEntries(believed.body.resources.map((x: any) => [x.id, x]));
  t.notOk("sha256" in byId["secret-file"].observed, "no hash of the secret-bearing file");
  t.equal(byId["secret-file"].observed.mode, "0600", "the rest of what was observed stays");
  const plainHash = createHash("sha256").update(plain).digest("hex");
  t.equal(byId["plain-file"].observed.sha256, plainHash, "a file without secrets keeps its hash");
  const plan = await run("plan", ["conf"]);
  const drift = await s.api("POST", `/agents/${web1}/drift?wait=30`);
  const responses = [believed, op, plan, drift, await s.api("GET", `/state/operations/${op.body.id}`)];
  for (const res of responses) t.notOk(res.text.includes(hash), "the hash is in no response");
  t.notOk((await s.dumpStateSchema()).includes(hash), "nor stored");
});

t.test("gateway: an operator cannot widen a restriction (403 problem), can narrow it", async (t) => {
  const key = ed25519();
  const created = await s.api("POST", "/operators", { name: "olga", public_key: key.publicKeyHex, role: "operator" });
  t.equal(created.status, 201, created.text);
  const token = await login(s.gw.url, key);
  const as = (method: string, path: string, body?: unknown) =>
    call(s.gw.url, method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
  await s.createSecret("db", "db-value-123", { nodeIds: [web1], tags: { env: "prod" } });
  const wider = [null, { node_ids: [web1, "b".repeat(32)], tags: { env: "prod" } }, { tags: { env: "test" } }];
  for (const restriction of wider) {
    const r = await as("PUT", "/secrets/db", { restriction });
    t.equal(r.status, 403, JSON.stringify(restriction));
    t.match(r.type, /problem\+json/);
    t.equal(r.body.code, "restriction_widening_requires_admin");
  }
  const current = (await s.api("GET", "/secrets/db")).body.restriction;
  t.same(current, { node_ids: [web1], tags: { env: "prod" } }, "unchanged");
  const narrowed = await as("PUT", "/secrets/db", { restriction: { node_ids: [web1] } });
  t.equal(narrowed.status, 200, narrowed.text);
  t.same(narrowed.body.restriction, { node_ids: [web1], tags: {} });
  const widened = await s.api("PUT", "/secrets/db", { restriction: null });
  t.equal(widened.status, 200, "an admin widens");
  t.equal(widened.body.restriction, null);
});

t.test("file hashes recorded before they were withheld are dropped by a migration", async (t) => {
  const pool = s.state.deps.pool;
  const old = { exists: true, sha256: "ab".repeat(32), size: 3, mode: "0600" };
  await pool.query(
    `INSERT INTO state.believed (node_id, module, resource_id, type, status, observed, operation_id, applied_at)
     VALUES ($1, 'legacy', 'f', 'file', 'changed', $2, 'op-legacy', 1)`,
    [web1, JSON.stringify(old)],
  );
  // As on a database migrated before this version: the migration has not run yet.
  await pool.query("DELETE FROM state.schema_migrations WHERE name LIKE '0002_%'");
  const restarted = await s.restartState();
  const row = await restarted.deps.pool.query("SELECT observed FROM state.believed WHERE module = 'legacy'");
  t.same(row.rows[0].observed, { exists: true, size: 3, mode: "0600" }, "hash dropped, the rest kept");
});

t.test("a module stored before the rule existed is refused when it is planned or applied", async (t) => {
  const content = mod("stored", `  - { id: x, type: exec, command: "echo {{ secrets.token }}" }`);
  await s.state.deps.pool.query(
    `INSERT INTO state.modules (name, content, sha256, description, resource_count, uploaded_at, uploaded_by)
     VALUES ('stored', $1, $2, '', 1, 1, 'admin')`,
    [content, createHash("sha256").update(content).digest("hex")],
  );
  for (const kind of ["plan", "apply"] as const) {
    const r = await run(kind, ["stored"]);
    t.equal(r.status, 400, kind);
    t.equal(r.body.code, "secret_in_argument");
    t.equal(r.body.path, "resources[0].command");
  }
});

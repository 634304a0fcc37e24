import t from "tap";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { cli } from "../../cli/test/helpers/cli.js";
import { eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

// Module bundles end to end: a directory with module.yaml and files/ pushed by orchctl (packed as
// tar.gz on the fly) or sent as a zip, its files stored as blobs, named `source: files/…`, one of
// them a template rendered per agent, shipped to a real orch-agent and written exactly. Hostile
// archives are refused with their codes and store no module. Real services, NATS, Postgres, agent.
const { linkPort, system, agents, dir } = await startStateStack(t, { name: "bundles" });
const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};
const digestOf = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

const env = { HOME: dir, ORCHCTL_HOME: join(dir, "home"), ORCH_URL: system.url };
const orchctl = (args: string[]) => cli(args, env);
const pem = join(dir, "admin.pem");
writeFileSync(pem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const login = await orchctl(["login", "--key", pem]);
if (login.code !== 0) throw new Error(`orchctl login: ${login.stderr}`);

const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--no-terminal"]);
const nodeId = await proc.nodeId();
await eventually(async () => (await api("GET", `/agents/${nodeId}`)).body?.connected === true, 20_000);
await must(api("POST", `/agents/${nodeId}`, { status: "approved", name: "web-1" }), 200);

const out = join(dir, "out");
mkdirSync(out);
const moduleYaml = (extra = "") =>
  [
    "version: 2",
    "name: site",
    "parameters:",
    "  greeting: { type: string, default: hello }",
    "resources:",
    "  - id: conf",
    "    type: file",
    `    path: ${out}/app.conf`,
    "    source: files/conf/app.conf.j2",
    "    template: true",
    "  - id: tool",
    "    type: file",
    `    path: ${out}/tool.bin`,
    "    source: files/bin/tool",
    '    mode: "0755"',
    "  - id: alias",
    "    type: file",
    `    path: ${out}/alias.bin`,
    "    source: files/alias",
    extra,
    "",
  ].join("\n");
const template = "{{ parameters.greeting }} from {{ agent.name }}\n{% for n in (1..3) %}worker {{ n }};\n{% endfor %}";
const tool = randomBytes(2 * 1024 * 1024 + 17);

function bundleDir(name: string, yaml = moduleYaml()): string {
  const root = join(dir, name);
  mkdirSync(join(root, "files", "conf"), { recursive: true });
  mkdirSync(join(root, "files", "bin"), { recursive: true });
  writeFileSync(join(root, "module.yaml"), yaml);
  writeFileSync(join(root, "files", "conf", "app.conf.j2"), template);
  writeFileSync(join(root, "files", "bin", "tool"), tool);
  symlinkSync("bin/tool", join(root, "files", "alias"));
  writeFileSync(join(root, "README.md"), "not shipped\n");
  return root;
}

/** PUT of an archive file's bytes to the bundle route. */
async function putBundle(name: string, body: Buffer): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(new URL(`/api/v1/modules/${name}/bundle`, system.url), {
    method: "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
    body,
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/**
 * An archive written by Python's tarfile/zipfile, which (unlike tar and zip) writes any name or
 * link. A number as data is that many zero bytes, made in Python (too large for an argument).
 */
function craft(
  kind: "tar.gz" | "zip",
  entries: Array<[name: string, data: string | number | null, link?: string]>,
): Buffer {
  const file = join(dir, `crafted-${randomBytes(4).toString("hex")}.${kind}`);
  const script =
    kind === "zip"
      ? `import sys, json, zipfile
z = zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED)
for name, data, link in json.loads(sys.argv[2]):
    z.writestr(name, bytes(data) if isinstance(data, int) else (data or ""))
z.close()`
      : `import sys, json, io, tarfile
t = tarfile.open(sys.argv[1], "w:gz")
for name, data, link in json.loads(sys.argv[2]):
    i = tarfile.TarInfo(name)
    if link is not None:
        i.type, i.linkname = tarfile.SYMTYPE, link
        t.addfile(i)
    else:
        b = bytes(data) if isinstance(data, int) else data.encode()
        i.size = len(b)
        t.addfile(i, io.BytesIO(b))
t.close()`;
  execFileSync("python3", ["-c", script, file, JSON.stringify(entries.map(([n, d, l]) => [n, d, l ?? null]))]);
  return readFileSync(file);
}

const run = (kind: "apply" | "plan") => must(api("POST", `/agents/web-1/${kind}?wait=60`, { modules: ["site"] }), 200);

t.test("orchctl modules push <dir>: the bundle's files become blobs the module names", async (t) => {
  const root = bundleDir("site");
  const r = await orchctl(["--json", "modules", "push", root]);
  t.equal(r.code, 0, r.stderr);
  const m = JSON.parse(r.stdout) as { name: string; files: Array<{ path: string; digest: string; size: number }> };
  t.equal(m.name, "site");
  t.same(
    m.files.map((f) => f.path),
    ["files/alias", "files/bin/tool", "files/conf/app.conf.j2"],
    "files/ only (no README), sorted; the symlink is a file of its own",
  );
  const byPath = new Map(m.files.map((f) => [f.path, f]));
  t.equal(byPath.get("files/bin/tool")?.digest, digestOf(tool));
  t.equal(byPath.get("files/alias")?.digest, digestOf(tool), "the link ships the file it names");
  t.equal(byPath.get("files/bin/tool")?.size, tool.length);
  const blob = await api("GET", `/blobs/${digestOf(tool)}`);
  t.equal(blob.status, 200, "the file is a stored blob");
  const shown = await must(api("GET", "/modules/site"), 200);
  t.equal(shown.content, moduleYaml(), "module.yaml as uploaded");
  t.equal(shown.files.length, 3);
  const human = await orchctl(["modules", "push", root]);
  t.match(human.stdout, /Uploaded module site \(3 resources, sha256 [0-9a-f]{12}\) with 3 files/);
});

t.test("apply: the template renders per agent, binaries are exact; a second apply changes nothing", async (t) => {
  const apply = await run("apply");
  t.equal(apply.status, "succeeded", JSON.stringify(apply.results));
  t.equal(readFileSync(join(out, "app.conf"), "utf8"), "hello from web-1\nworker 1;\nworker 2;\nworker 3;\n");
  t.equal(digestOf(readFileSync(join(out, "tool.bin"))), digestOf(tool));
  t.equal(statSync(join(out, "tool.bin")).mode & 0o7777, 0o755);
  t.equal(digestOf(readFileSync(join(out, "alias.bin"))), digestOf(tool));
  const again = await run("apply");
  t.same(
    again.results.map((r: { status: string }) => r.status),
    ["ok", "ok", "ok"],
  );
});

t.test("a changed file in the bundle is a new module version; the plan shows the template's diff", async (t) => {
  const before = (await must(api("GET", "/modules/site"), 200)).sha256;
  const root = bundleDir("site-2");
  writeFileSync(join(root, "files", "conf", "app.conf.j2"), template.replace(" from ", " at "));
  t.equal((await orchctl(["modules", "push", root, "--name", "site"])).code, 0);
  const after = (await must(api("GET", "/modules/site"), 200)).sha256;
  t.not(after, before, "same module.yaml, other files: another version");
  const plan = await run("plan");
  t.equal(plan.summary.changed, 1);
  t.match(plan.results[0].diff, /-hello from web-1\n\+hello at web-1/);
});

t.test("a zip bundle under one top-level directory", async (t) => {
  const root = bundleDir("zipped");
  const zip = join(dir, "zipped.zip");
  execFileSync("zip", ["-qry", zip, "zipped"], { cwd: dir });
  const r = await orchctl(["--json", "modules", "push", zip, "--name", "site"]);
  t.equal(r.code, 0, r.stderr);
  t.equal(JSON.parse(r.stdout).files.length, 3, root);
});

t.test("hostile or broken bundles are refused with their codes, and store no module", async (t) => {
  const yaml = moduleYaml().replace("name: site", "name: evil");
  const cases: Array<[string, Buffer, number, string]> = [
    ["not an archive", Buffer.from("just text, not a tarball"), 400, "invalid_bundle"],
    ["no module.yaml", craft("tar.gz", [["files/a", "x"]]), 400, "invalid_bundle"],
    [
      "a .. path",
      craft("tar.gz", [
        ["module.yaml", yaml],
        ["files/../../escape", "x"],
      ]),
      400,
      "unsafe_bundle_path",
    ],
    [
      "an absolute path",
      craft("zip", [
        ["module.yaml", yaml],
        ["/etc/cron.d/x", "x"],
      ]),
      400,
      "unsafe_bundle_path",
    ],
    [
      "a symlink out of the tree",
      craft("tar.gz", [
        ["module.yaml", yaml],
        ["files/passwd", null, "../../../etc/passwd"],
      ]),
      400,
      "unsafe_bundle_path",
    ],
    [
      "a zip bomb (64 MiB of zeros in a few KiB)",
      craft("zip", [
        ["module.yaml", yaml],
        ["files/zeros", 64 * 1024 * 1024],
      ]),
      413,
      "bundle_too_large",
    ],
  ];
  for (const [what, body, status, code] of cases) {
    const r = await putBundle("evil", body);
    t.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
    t.equal(r.body.code, code, what);
  }
  t.equal((await api("GET", "/modules/evil")).status, 404, "no module stored");

  const missing = craft("tar.gz", [
    ["module.yaml", yaml],
    ["files/conf/app.conf.j2", "x"],
    ["files/alias", "a"],
    ["files/sbin/tool", "t"],
  ]);
  const m = await putBundle("evil", missing);
  t.equal(m.body.code, "unknown_bundle_file");
  t.equal(m.body.line, 14, "at the source's YAML line");
  t.match(m.body.detail as string, /the bundle has no file files\/bin\/tool \(did you mean files\/sbin\/tool\?\)/);

  const badTemplate = craft("tar.gz", [
    ["module.yaml", yaml],
    ["files/conf/app.conf.j2", "line one\n{% for x in %}\n"],
    ["files/bin/tool", "t"],
    ["files/alias", "a"],
  ]);
  const bt = await putBundle("evil", badTemplate);
  t.equal(bt.body.code, "invalid_template");
  t.match(bt.body.detail as string, /files\/conf\/app\.conf\.j2: template line 2/);
  t.equal((await api("GET", "/modules/evil")).status, 404, "still no module");

  const plain = await api("POST", "/modules", { name: "evil", content: yaml });
  t.equal(plain.body.code, "unknown_bundle_file", "a YAML upload has no files");
  t.match(plain.body.detail, /upload it as a bundle/);
});

t.test("over the size limit: 413 before the body is read", async (t) => {
  const huge = await new Promise<{ status: number; body: { code: string } }>((resolve, reject) => {
    const req = request(
      new URL("/api/v1/modules/evil/bundle", system.url),
      { method: "PUT", headers: { authorization: `Bearer ${token}`, "content-length": String(2 * 1024 ** 3) } },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on("error", reject);
    req.write(Buffer.alloc(1024));
  });
  t.equal(huge.status, 413);
  t.equal(huge.body.code, "bundle_too_large");
});

t.test("a templated source resolves per agent through the bundle; a file it lacks fails before sending", async (t) => {
  const root = join(dir, "flavors");
  mkdirSync(join(root, "files", "bin"), { recursive: true });
  const other = randomBytes(4096);
  writeFileSync(join(root, "files", "bin", "tool"), tool);
  writeFileSync(join(root, "files", "bin", "other"), other);
  const yaml = (flavor: string) =>
    [
      "version: 2",
      "name: flavors",
      "parameters:",
      `  flavor: { type: string, default: ${flavor} }`,
      "resources:",
      "  - id: bin",
      "    type: file",
      `    path: ${out}/flavor.bin`,
      '    source: "files/bin/{{ parameters.flavor }}"',
      "",
    ].join("\n");
  const applyFlavors = () => must(api("POST", "/agents/web-1/apply?wait=60", { modules: ["flavors"] }), 200);
  writeFileSync(join(root, "module.yaml"), yaml("other"));
  const pushed = await orchctl(["modules", "push", root]);
  t.equal(pushed.code, 0, pushed.stderr);
  const ok = await applyFlavors();
  t.equal(ok.status, "succeeded", JSON.stringify(ok.results));
  t.equal(digestOf(readFileSync(join(out, "flavor.bin"))), digestOf(other));

  writeFileSync(join(root, "module.yaml"), yaml("nope"));
  t.equal((await orchctl(["modules", "push", root])).code, 0);
  const bad = await applyFlavors();
  t.equal(bad.status, "failed");
  t.match(
    JSON.stringify(bad),
    /flavors\/bin: source rendered to \\"files\/bin\/nope\\", which is not a file of the module's bundle/,
  );
  t.equal(digestOf(readFileSync(join(out, "flavor.bin"))), digestOf(other), "the file is as it was");

  const literal = await api("POST", "/modules", {
    name: "flavors",
    content: yaml("x")
      .replace("version: 2", "version: 1")
      .replace(/parameters:\n.*\n/, ""),
  });
  t.equal(literal.body.code, "invalid_module");
  t.match(literal.body.detail, /a templated source needs version: 2/);
});

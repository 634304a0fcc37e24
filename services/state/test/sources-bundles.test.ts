import t from "tap";
import { createHash, randomBytes } from "node:crypto";
import { symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ADMIN } from "./harness.js";
import { startSourcesStack } from "./sources-sync-harness.js";

// Module bundles in a git source (docs/sources.md): modules/<name>/module.yaml beside
// modules/<name>/files/…, each file stored as a blob the first time its git object is seen,
// `source: files/…` resolved as a bundle upload resolves it, template sources checked at the
// sync. Real git over smart HTTP, Postgres, NATS and the state service.
const x = await startSourcesStack(t);
const { s, sync } = x;
const rpc = s.stateRpc;
const repo = await x.repo("bundles");
const server = await x.server();
await x.addSource("bundles", server.url("bundles"));

const digestOf = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const binary = randomBytes(700 * 1024 + 3); // three chunks and a bit
const module = (extra = "") =>
  [
    "version: 2",
    "name: web",
    "resources:",
    "  - id: bin",
    "    type: file",
    `    path: ${x.marks}/web.bin`,
    "    source: files/bin/web",
    "  - id: conf",
    "    type: file",
    `    path: ${x.marks}/web.conf`,
    "    source: files/web.conf",
    "    template: true",
    extra,
    "",
  ].join("\n");
const blobEvents = async () => (await x.pool.query("SELECT count(*)::int AS n FROM blobs")).rows[0].n as number;

t.test("a bundle directory syncs: its files become blobs, the module keeps the manifest", async (t) => {
  await repo.write("modules/web/module.yaml", module());
  await repo.write("modules/web/files/web.conf", "agent {{ agent.name }}\n");
  await repo.write("modules/web/files/bin/web", "");
  await writeFile(join(repo.dir, "modules/web/files/bin/web"), binary);
  await repo.commit("web bundle");
  await sync.sync("bundles", x.manual);
  const row = await x.row("bundles");
  t.same([row.status, row.errors], ["ok", []]);
  const m = await rpc.getModule({ name: "web" }, { actor: ADMIN });
  t.same(
    m.files.map((f) => [f.path, f.digest, Number(f.size)]),
    [
      ["files/bin/web", digestOf(binary), binary.length],
      ["files/web.conf", digestOf(Buffer.from("agent {{ agent.name }}\n")), 23],
    ],
  );
  const blob = await rpc.getBlob({ digest: digestOf(binary) }, { actor: ADMIN });
  t.equal(Number(blob.size), binary.length, "the binary is a stored blob");
  t.equal(blob.createdByName, "source bundles");
});

t.test("a later sync of an unchanged file stores nothing again", async (t) => {
  const before = await blobEvents();
  await repo.write("modules/web/module.yaml", module("  # a comment"));
  await repo.commit("touch module.yaml only");
  await sync.sync("bundles", x.manual);
  t.equal((await x.row("bundles")).status, "ok");
  t.equal(await blobEvents(), before, "no new blob");
});

t.test("a bad template, a missing file and a symlink fail the sync, keeping the last good commit", async (t) => {
  const good = (await x.row("bundles")).commit;
  await repo.write("modules/web/files/web.conf", "{% if %}\n");
  await repo.commit("broken template");
  await sync.sync("bundles", x.manual);
  let row = await x.row("bundles");
  t.equal(row.status, "error");
  t.equal(row.commit, good);
  t.match(row.errors, [
    {
      file: "modules/web/module.yaml",
      line: 11,
      code: "invalid_template",
      message: /files\/web\.conf: template line 1/,
    },
  ]);

  await repo.write("modules/web/files/web.conf", "ok\n");
  await repo.write("modules/web/module.yaml", module().replace("files/bin/web", "files/bin/gone"));
  await repo.commit("missing file");
  await sync.sync("bundles", x.manual);
  row = await x.row("bundles");
  t.match(row.errors, [{ file: "modules/web/module.yaml", line: 7, code: "unknown_bundle_file" }]);

  await repo.write("modules/web/module.yaml", module());
  await symlink("/etc/passwd", join(repo.dir, "modules/web/files/passwd"));
  await repo.commit("a symlink");
  await sync.sync("bundles", x.manual);
  row = await x.row("bundles");
  t.match(row.errors, [{ file: "modules/web/files/passwd", code: "invalid_bundle", message: /a symlink/ }]);
  t.equal(row.commit, good, "still the last good commit");
});

t.test("files/ without module.yaml is an error, not silently ignored", async (t) => {
  await repo.remove("modules/web/files/passwd");
  await repo.write("modules/api/files/x", "x");
  await repo.commit("stray files");
  await sync.sync("bundles", x.manual);
  const row = await x.row("bundles");
  t.match(row.errors, [{ file: "modules/api/files", code: "invalid_bundle" }]);
  await repo.remove("modules/api");
  await repo.commit("fixed");
  await sync.sync("bundles", x.manual);
  t.equal((await x.row("bundles")).status, "ok");
});

import t from "tap";
import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { BLOB_CHUNK_BYTES } from "@orch/contracts";
import type { OrchError } from "@orch/kit";
import { unknownDigests } from "../src/blobs/referenced.js";
import { collectBlobs } from "../src/blobs/sweep.js";
import { blobsDb } from "../src/blobs/tables.js";
import { modulesDb } from "../src/db/catalog.js";
import { ADMIN, operator, startStack } from "./harness.js";

// Deleting blobs (DELETE /api/v1/blobs/{digest}, the DeleteBlob RPC) and collecting the ones no
// module names, against real Postgres and NATS: what counts as in use (a module's YAML, its bundle
// manifest, a version still kept), what a deletion removes and records, the grace period, and the
// lock that orders a deletion against a module upload naming the same blob.
const s = await startStack(t);
const rpc = s.stateRpc;
const as = { actor: ADMIN };
const pool = s.state.deps.pool;
const DAY = 86_400_000;

const digestOf = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const reason = async (p: Promise<unknown>) =>
  (
    (await p.then(
      () => undefined,
      (e: OrchError) => e,
    )) as OrchError | undefined
  )?.reason;

/** Stores `bytes` as a blob through the upload RPCs; returns its row. */
async function store(bytes: Buffer) {
  const digest = digestOf(bytes);
  const { uploadId } = await rpc.beginBlobUpload({ digest, size: BigInt(bytes.length) }, as);
  for (let seq = 0; seq * BLOB_CHUNK_BYTES < bytes.length; seq++)
    await rpc.putBlobChunk(
      { uploadId, seq, data: bytes.subarray(seq * BLOB_CHUNK_BYTES, (seq + 1) * BLOB_CHUNK_BYTES) },
      as,
    );
  await rpc.commitBlobUpload({ uploadId }, as);
  return (await blobsDb.get(pool, digest))!;
}
const fresh = () => store(randomBytes(64));

/** A module whose one file resource writes `source`. */
const moduleYaml = (name: string, source: string) =>
  [
    `name: ${name}`,
    "resources:",
    "  - id: app",
    "    type: file",
    `    path: /tmp/orch-blobs-gc/${name}`,
    `    source: ${source}`,
    "",
  ].join("\n");
const upload = (name: string, source: string, files: { path: string; digest: string; size: bigint }[] = []) =>
  rpc.uploadModule({ name, content: moduleYaml(name, source), files }, as);

const del = (digest: string) => s.api("DELETE", `/blobs/${digest}`);
const chunksOf = async (contentId: string) =>
  Number((await pool.query("SELECT count(*) AS n FROM blob_chunks WHERE content_id = $1", [contentId])).rows[0].n);
/** Makes a blob look stored `days` ago. */
const backdate = (digest: string, days: number) =>
  pool.query("UPDATE blobs SET created_at = created_at - $2 WHERE digest = $1", [digest, days * DAY]);
const stored = async (digest: string) => (await blobsDb.get(pool, digest)) !== undefined;

// Named by the module "lit" in its YAML, by "bundle" in its manifest; kept from here to the collector.
const literal = await fresh();
const manifest = await fresh();

t.test("a blob a module names in its YAML or in its bundle manifest is in use", async (t) => {
  await upload("lit", literal.digest);
  const byYaml = await del(literal.digest);
  t.equal(byYaml.status, 409);
  t.equal(byYaml.body.code, "blob_in_use");
  t.same(byYaml.body.modules, ["lit"]);
  t.match(byYaml.body.detail, /is named by module lit$/);

  await upload("bundle", "files/app.bin", [{ path: "files/app.bin", digest: manifest.digest, size: 64n }]);
  t.notMatch((await rpc.getModule({ name: "bundle" }, as)).content, manifest.digest, "not in the YAML");
  const byFiles = await del(manifest.digest);
  t.same([byFiles.status, byFiles.body.code, byFiles.body.modules], [409, "blob_in_use", ["bundle"]]);
  t.ok(await stored(literal.digest));
  t.ok(await stored(manifest.digest));
});

t.test("a version still kept names its blobs after the module moved on", async (t) => {
  const old = await fresh();
  await upload("moved", old.digest);
  await upload("moved", literal.digest);
  const res = await del(old.digest);
  t.same([res.status, res.body.code, res.body.modules], [409, "blob_in_use", ["moved"]]);
  t.match(res.body.detail, /named by a kept version of module moved \(snapshots and drift checks use it\)/);
  // The sweep prunes a version nothing refers to a day after it was replaced; then the blob can go.
  t.ok((await modulesDb.pruneVersions(pool, Date.now() + 2 * DAY)) >= 1);
  t.equal((await del(old.digest)).status, 204);
});

t.test("a deletion removes the blob, its chunks and its git mappings in one event", async (t) => {
  const big = await store(randomBytes(2 * BLOB_CHUNK_BYTES + 10));
  t.equal(await chunksOf(big.content_id), 3);
  await pool.query("INSERT INTO source_blob_digests (oid, digest, size) VALUES ($1, $2, $3)", [
    "a".repeat(40),
    big.digest,
    big.size,
  ]);
  const res = await del(big.digest);
  t.equal(res.status, 204);
  t.notOk(await stored(big.digest));
  t.equal(await chunksOf(big.content_id), 0);
  const mapped = await pool.query("SELECT 1 FROM source_blob_digests WHERE digest = $1", [big.digest]);
  t.equal(mapped.rowCount, 0, "a later sync stores the git object again");
  const ev = (await s.events("blob.deleted")).filter((e) => e.target?.id === big.digest);
  t.equal(ev.length, 1);
  t.match(ev[0], { actor: { type: "operator" }, target: { type: "blob" }, summary: /deleted by / });
  t.same(ev[0]!.metadata, { digest: big.digest, size: big.size });

  const again = await del(big.digest);
  t.same([again.status, again.body.code], [404, "blob_not_found"]);
  const bad = await del("sha256:nothex");
  t.same([bad.status, bad.body.code], [400, "invalid_digest"]);
});

t.test("only an admin may delete, also on the bus", async (t) => {
  const b = await fresh();
  t.equal(await reason(rpc.deleteBlob({ digest: b.digest }, { actor: operator("bob") })), "admin_required");
  t.ok(await stored(b.digest));
  await rpc.deleteBlob({ digest: b.digest }, as);
  t.notOk(await stored(b.digest));
});

t.test("the collector deletes blobs nothing names once past the grace period", async (t) => {
  const unnamed = await fresh();
  const justUploaded = await fresh();
  const inGrace = await fresh();
  for (const d of [unnamed.digest, literal.digest, manifest.digest]) await backdate(d, 8);
  await backdate(inGrace.digest, 6);
  const before = (await s.events("blob.deleted")).length;
  t.equal(await collectBlobs(s.state.deps), 1);
  t.notOk(await stored(unnamed.digest), "unnamed and 8 days old");
  t.equal(await chunksOf(unnamed.content_id), 0);
  t.ok(await stored(justUploaded.digest), "uploaded moments ago, its module not pushed yet");
  t.ok(await stored(inGrace.digest), "6 days old, within the 7-day grace");
  t.ok(await stored(literal.digest), "named by a module's YAML");
  t.ok(await stored(manifest.digest), "named by a module's manifest");
  const evs = (await s.events("blob.deleted")).slice(before);
  t.equal(evs.length, 1);
  t.match(evs[0], { actor: { id: "system:blob-gc", type: "system" }, target: { id: unnamed.digest } });
  t.same(evs[0]!.metadata, { digest: unnamed.digest, size: 64, reason: "unreferenced" });

  // Once its module is gone (and its version pruned), the blob goes too.
  await rpc.deleteModule({ name: "lit" }, as);
  await modulesDb.pruneVersions(pool, Date.now() + 2 * DAY);
  t.equal(await collectBlobs(s.state.deps), 0, "a later version of 'moved' names it too");
  await rpc.deleteModule({ name: "moved" }, as);
  await modulesDb.pruneVersions(pool, Date.now() + 2 * DAY);
  t.equal(await collectBlobs(s.state.deps), 1);
  t.notOk(await stored(literal.digest));
  t.ok(await stored(manifest.digest));
});

/** Whether `p` is still pending after a moment (it waits for a lock). */
const waits = async (p: Promise<unknown>) =>
  (await Promise.race([
    p.then(
      () => "settled",
      () => "settled",
    ),
    sleep(300).then(() => "waiting"),
  ])) === "waiting";

t.test("a module upload holding a blob makes a concurrent deletion wait, then refuse", async (t) => {
  const b = await fresh();
  const c = await pool.connect();
  t.teardown(() => c.release());
  await c.query("BEGIN");
  // What the upload's transaction does before writing the module (catalog/module-write.ts).
  t.same([...(await unknownDigests(c, [b.digest], { lock: true }))], []);
  const deleting = reason(rpc.deleteBlob({ digest: b.digest }, as));
  t.ok(await waits(deleting), "the deletion waits for the upload");
  await modulesDb.upsert(c, {
    name: "racer",
    content: moduleYaml("racer", b.digest),
    sha256: "f".repeat(64),
    description: "",
    resource_count: 1,
    uploaded_at: Date.now(),
    uploaded_by: ADMIN.id,
    uploaded_by_name: ADMIN.name,
    source: null,
    source_commit: "",
    removed_from_source: false,
    files: null,
  });
  await c.query("COMMIT");
  t.equal(await deleting, "blob_in_use");
  t.ok(await stored(b.digest));
});

t.test("a deletion holding a blob makes a concurrent module upload wait, then answer unknown_blob", async (t) => {
  const b = await fresh();
  const c = await pool.connect();
  t.teardown(() => c.release());
  await c.query("BEGIN");
  const row = await blobsDb.lockForDelete(c, b.digest);
  const uploading = reason(upload("late", b.digest));
  t.ok(await waits(uploading), "the upload waits for the deletion");
  await blobsDb.remove(c, [row!]);
  await c.query("COMMIT");
  t.equal(await uploading, "unknown_blob");
  t.equal(await reason(rpc.getModule({ name: "late" }, as)), "module_not_found", "nothing names a deleted blob");
});

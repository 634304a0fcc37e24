import t from "tap";
import { createHash, randomBytes } from "node:crypto";
import { BLOB_CHUNK_BYTES } from "@orch/contracts";
import type { OrchError } from "@orch/kit";
import { sweepUploads } from "../src/blobs/sweep.js";
import { ADMIN, operator, startStack } from "./harness.js";

// The state service's blob RPCs as the gateway drives them, against real Postgres and NATS: the
// rules a chunk must follow, retries, who may continue an upload, reads from any offset, and the
// sweep of uploads nobody finished.
const s = await startStack(t);
const rpc = s.stateRpc;
const as = { actor: ADMIN };
const digestOf = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const reason = async (p: Promise<unknown>) =>
  (
    (await p.then(
      () => undefined,
      (e: OrchError) => e,
    )) as OrchError
  )?.reason;
const count = async (table: string) =>
  Number((await s.state.deps.pool.query(`SELECT count(*) AS n FROM state.${table}`)).rows[0].n);

const bytes = randomBytes(2 * BLOB_CHUNK_BYTES + 1000);
const digest = digestOf(bytes);
const pieces = [0, 1, 2].map((i) => bytes.subarray(i * BLOB_CHUNK_BYTES, (i + 1) * BLOB_CHUNK_BYTES));

t.test("chunks go in order; a retried chunk with the same bytes is taken again, other bytes are not", async (t) => {
  const { uploadId } = await rpc.beginBlobUpload({ digest, size: BigInt(bytes.length) }, as);
  t.equal(await reason(rpc.putBlobChunk({ uploadId, seq: 1, data: pieces[1]! }, as)), "invalid_chunk", "out of order");
  await rpc.putBlobChunk({ uploadId, seq: 0, data: pieces[0]! }, as);
  await rpc.putBlobChunk({ uploadId, seq: 0, data: pieces[0]! }, as);
  t.pass("the same chunk twice (a lost answer) is harmless");
  t.equal(await reason(rpc.putBlobChunk({ uploadId, seq: 0, data: pieces[1]! }, as)), "invalid_chunk", "other bytes");
  t.equal(
    await reason(rpc.putBlobChunk({ uploadId, seq: 1, data: pieces[1]! }, { actor: operator("mallory") })),
    "upload_not_found",
    "someone else cannot continue it",
  );
  t.equal(
    await reason(rpc.putBlobChunk({ uploadId, seq: 1, data: Buffer.alloc(BLOB_CHUNK_BYTES + 1) }, as)),
    "invalid_chunk",
    "too large",
  );
  await rpc.putBlobChunk({ uploadId, seq: 1, data: pieces[1]! }, as);
  await rpc.putBlobChunk({ uploadId, seq: 2, data: pieces[2]! }, as);
  t.equal(
    await reason(rpc.putBlobChunk({ uploadId, seq: 3, data: Buffer.from("x") }, as)),
    "blob_size_mismatch",
    "past the declared size",
  );
  const blob = await rpc.commitBlobUpload({ uploadId }, as);
  t.equal(blob.digest, digest);
  t.equal(Number(blob.size), bytes.length);
  t.equal(await count("blob_uploads"), 0);
});

t.test("reads from any offset return the right bytes, chunk boundaries or not", async (t) => {
  for (const offset of [0, 1, BLOB_CHUNK_BYTES - 1, BLOB_CHUNK_BYTES, 2 * BLOB_CHUNK_BYTES + 999]) {
    const c = await rpc.readBlobChunk({ digest, offset: BigInt(offset), maxBytes: 4096 }, as);
    // A read stops at the end of the stored chunk that holds its offset; the caller reads on.
    const chunkEnd = (Math.floor(offset / BLOB_CHUNK_BYTES) + 1) * BLOB_CHUNK_BYTES;
    const want = bytes.subarray(offset, Math.min(offset + 4096, chunkEnd));
    t.ok(Buffer.from(c.data).equals(want), `offset ${offset}`);
    t.equal(c.eof, offset + want.length >= bytes.length, `eof at ${offset}`);
  }
  const end = await rpc.readBlobChunk({ digest, offset: BigInt(bytes.length), maxBytes: 0 }, as);
  t.same([end.data.length, end.eof], [0, true]);
  t.equal(
    await reason(rpc.readBlobChunk({ digest, offset: BigInt(bytes.length + 1), maxBytes: 0 }, as)),
    "invalid_chunk",
  );
});

t.test("an upload ending short of its size, or hashing to another digest, is dropped whole", async (t) => {
  const short = await rpc.beginBlobUpload({ digest: digestOf(Buffer.from("ab")), size: 2n }, as);
  await rpc.putBlobChunk({ uploadId: short.uploadId, seq: 0, data: Buffer.from("a") }, as);
  t.equal(await reason(rpc.commitBlobUpload({ uploadId: short.uploadId }, as)), "blob_size_mismatch");
  const wrong = await rpc.beginBlobUpload({ digest: digestOf(Buffer.from("ab")), size: -1n }, as);
  await rpc.putBlobChunk({ uploadId: wrong.uploadId, seq: 0, data: Buffer.from("ba") }, as);
  t.equal(await reason(rpc.commitBlobUpload({ uploadId: wrong.uploadId }, as)), "blob_digest_mismatch");
  t.same([await count("blob_uploads"), await count("blob_chunks")], [0, 3], "only the stored blob's chunks remain");
});

t.test("a stored blob is not uploaded again", async (t) => {
  const again = await rpc.beginBlobUpload({ digest, size: BigInt(bytes.length) }, as);
  t.equal(again.uploadId, "");
  t.equal(again.existing?.digest, digest);
});

t.test("uploads nobody finished are swept with their chunks", async (t) => {
  const left = await rpc.beginBlobUpload({ digest: digestOf(Buffer.from("never")), size: -1n }, as);
  await rpc.putBlobChunk({ uploadId: left.uploadId, seq: 0, data: Buffer.from("nev") }, as);
  t.same([await count("blob_uploads"), await count("blob_chunks")], [1, 4]);
  const deps = s.state.deps;
  await sweepUploads({ ...deps, clock: { now: () => deps.clock.now() + 2 * 3600_000 } } as typeof deps);
  t.same([await count("blob_uploads"), await count("blob_chunks")], [0, 3]);
});

t.test("a template source stored in many small chunks is read whole", async (t) => {
  // 300 KiB of text in 4 KiB chunks (75 of them); an {% if %} opened on the first line is closed
  // only on the last, so a read that stopped early would leave it unclosed (invalid_template).
  const body = `{% if true %}\n${"x".repeat(299 * 1024)}\n{% endif %}\n`;
  const text = Buffer.from(body);
  const d = digestOf(text);
  const { uploadId } = await rpc.beginBlobUpload({ digest: d, size: BigInt(text.length) }, as);
  for (let seq = 0, at = 0; at < text.length; seq++, at += 4096)
    await rpc.putBlobChunk({ uploadId, seq, data: text.subarray(at, at + 4096) }, as);
  await rpc.commitBlobUpload({ uploadId }, as);
  const content = [
    "version: 2",
    "name: tpl-chunks",
    "resources:",
    "  - id: f",
    "    type: file",
    "    path: /tmp/orch-tpl-chunks",
    `    source: ${d}`,
    "    template: true",
    "",
  ].join("\n");
  const m = await rpc.uploadModule({ name: "tpl-chunks", content }, as);
  t.equal(m.name, "tpl-chunks", "the whole template parsed");
});

import t from "tap";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BLOB_CHUNK_BYTES } from "@orch/contracts";
import { BlobCache, type ChunkResult } from "../src/blobs/cache.js";
import { AgentError } from "../src/runtime.js";

// The agent's blob cache against a real directory: chunked writes, resume, refusal, modes.
const digestOf = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const hexOf = (digest: string) => digest.slice("sha256:".length);
const completeFile = (dir: string, digest: string) => join(dir, "blobs", "sha256", hexOf(digest));
const partialFile = (dir: string, digest: string) => join(dir, "blobs", "partial", hexOf(digest));

/** Writes `blob` in BLOB_CHUNK_BYTES chunks from `from` up to `to`; returns the last answer. */
async function send(cache: BlobCache, blob: Buffer, from = 0, to = blob.length): Promise<ChunkResult | undefined> {
  const digest = digestOf(blob);
  let last: ChunkResult | undefined;
  for (let off = from; off < to; off += BLOB_CHUNK_BYTES) {
    const data = blob.subarray(off, Math.min(off + BLOB_CHUNK_BYTES, to));
    last = await cache.write({ digest, size: blob.length, offset: off, data });
    if (last.have !== off + data.length) throw new Error(`chunk at ${off} answered have=${last.have}`);
  }
  return last;
}

/** The AgentError a promise rejects with (fails the test if it resolves or throws something else). */
async function refusal(p: Promise<unknown>): Promise<AgentError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof AgentError)) throw new Error(`expected an AgentError, got ${String(e)}`);
  return e;
}

t.test(
  "a 3 MiB blob in 256 KiB chunks: missing before, during and after; the cached bytes are the input",
  async (t) => {
    const dir = t.testdir({});
    const cache = new BlobCache(dir);
    const blob = randomBytes(3 * 1024 * 1024);
    const digest = digestOf(blob);
    t.same(await cache.missing([digest]), [{ digest, have: 0 }], "missing before");
    t.equal(await cache.path(digest), undefined);

    await send(cache, blob, 0, 5 * BLOB_CHUNK_BYTES);
    t.same(await cache.missing([digest]), [{ digest, have: 5 * BLOB_CHUNK_BYTES }], "missing during");
    t.equal(await cache.path(digest), undefined, "a partial blob is not readable through path()");

    const last = await send(cache, blob, 5 * BLOB_CHUNK_BYTES);
    t.same(last, { have: blob.length, complete: true });
    t.same(await cache.missing([digest]), [], "nothing missing after");
    const path = await cache.path(digest);
    t.equal(path, completeFile(dir, digest));
    t.ok(readFileSync(path!).equals(blob), "the cached bytes are the input");
    t.notOk(existsSync(partialFile(dir, digest)), "no partial left");
    t.same(await cache.write({ digest, size: blob.length, offset: 0, data: blob.subarray(0, 10) }), {
      have: blob.length,
      complete: true,
    });
    t.ok(readFileSync(path!).equals(blob), "a write to a complete blob changes nothing");
  },
);

t.test("missing() keeps the order asked and answers each digest once", async (t) => {
  const dir = t.testdir({});
  const cache = new BlobCache(dir);
  const [a, b, c] = [randomBytes(10), randomBytes(20), randomBytes(30)];
  await send(cache, b);
  await cache.write({ digest: digestOf(c), size: c.length, offset: 0, data: c.subarray(0, 7) });
  t.same(await cache.missing([digestOf(c), digestOf(b), digestOf(a), digestOf(c)]), [
    { digest: digestOf(c), have: 7 },
    { digest: digestOf(a), have: 0 },
  ]);
});

t.test("a transfer cut off resumes on a new cache over the same directory", async (t) => {
  const dir = t.testdir({});
  const blob = randomBytes(2 * 1024 * 1024);
  const digest = digestOf(blob);
  const half = blob.length / 2;
  await send(new BlobCache(dir), blob, 0, half);

  const restarted = new BlobCache(dir);
  const [gap] = await restarted.missing([digest]);
  t.same(gap, { digest, have: half }, "the new instance sees the half already held");
  t.same(await send(restarted, blob, gap!.have), { have: blob.length, complete: true });
  t.ok(readFileSync((await restarted.path(digest))!).equals(blob));
});

t.test("duplicate and out-of-order chunks are answered with what is held and change nothing", async (t) => {
  const dir = t.testdir({});
  const cache = new BlobCache(dir);
  const blob = randomBytes(4 * BLOB_CHUNK_BYTES);
  const digest = digestOf(blob);
  const chunk = (i: number, data = blob.subarray(i * BLOB_CHUNK_BYTES, (i + 1) * BLOB_CHUNK_BYTES)) =>
    cache.write({ digest, size: blob.length, offset: i * BLOB_CHUNK_BYTES, data });
  await chunk(0);
  await chunk(1);
  const held = () => readFileSync(partialFile(dir, digest));
  const before = held();

  t.same(await chunk(1), { have: 2 * BLOB_CHUNK_BYTES, complete: false }, "a duplicate");
  t.same(await chunk(0, randomBytes(BLOB_CHUNK_BYTES)), { have: 2 * BLOB_CHUNK_BYTES, complete: false }, "a rewrite");
  t.same(await chunk(3), { have: 2 * BLOB_CHUNK_BYTES, complete: false }, "one from the future");
  t.ok(held().equals(before), "the partial blob is untouched");

  await chunk(2);
  t.same(await chunk(3), { have: blob.length, complete: true });
  t.ok(readFileSync((await cache.path(digest))!).equals(blob));
});

t.test("bytes that do not hash to the digest are refused and never enter the cache", async (t) => {
  const dir = t.testdir({});
  const cache = new BlobCache(dir);
  const claimed = randomBytes(3 * BLOB_CHUNK_BYTES);
  const sent = Buffer.from(claimed);
  sent[sent.length - 1]! ^= 0xff;
  const digest = digestOf(claimed);
  const write = (i: number) =>
    cache.write({
      digest,
      size: sent.length,
      offset: i * BLOB_CHUNK_BYTES,
      data: sent.subarray(i * BLOB_CHUNK_BYTES, (i + 1) * BLOB_CHUNK_BYTES),
    });
  await write(0);
  await write(1);
  const e = await refusal(write(2));
  t.equal(e.code, "INVALID_ARGUMENT");
  t.equal(e.reason, "blob_digest_mismatch");
  t.match(e.message, digestOf(sent), "the message names what the bytes hash to");
  t.equal(await cache.path(digest), undefined, "not in the cache");
  t.notOk(existsSync(completeFile(dir, digest)));
  t.notOk(existsSync(partialFile(dir, digest)), "the partial blob is removed");
  t.same(await cache.missing([digest]), [{ digest, have: 0 }], "the sender starts over");
});

t.test("invalid digests are refused with invalid_digest", async (t) => {
  const cache = new BlobCache(t.testdir({}));
  const good = digestOf(Buffer.from("x"));
  for (const bad of ["", "sha256:", `sha256:${"A".repeat(64)}`, `sha1:${"a".repeat(40)}`, `${good}0`, hexOf(good)]) {
    t.equal((await refusal(cache.missing([good, bad]))).reason, "invalid_digest", `missing ${bad}`);
    t.equal((await refusal(cache.path(bad))).reason, "invalid_digest", `path ${bad}`);
    const write = cache.write({ digest: bad, size: 1, offset: 0, data: Buffer.from("x") });
    t.equal((await refusal(write)).reason, "invalid_digest", `write ${bad}`);
  }
});

t.test("chunks too large, past the size, or with impossible numbers are refused with invalid_chunk", async (t) => {
  const dir = t.testdir({});
  const cache = new BlobCache(dir);
  const big = randomBytes(BLOB_CHUNK_BYTES * 4 + 1);
  const digest = digestOf(big);
  const cases: Array<[string, { size: number; offset: number; data: Uint8Array }]> = [
    ["more than four chunks in one", { size: big.length, offset: 0, data: big }],
    ["offset + length past the size", { size: 10, offset: 5, data: big.subarray(0, 6) }],
    ["data longer than the size", { size: 3, offset: 0, data: big.subarray(0, 4) }],
    ["a negative size", { size: -1, offset: 0, data: new Uint8Array() }],
    ["a size over 1 TiB", { size: 2 ** 40 + 1, offset: 0, data: new Uint8Array() }],
    ["a fractional size", { size: 1.5, offset: 0, data: new Uint8Array() }],
    ["a negative offset", { size: 10, offset: -1, data: big.subarray(0, 1) }],
  ];
  for (const [name, c] of cases) {
    const e = await refusal(cache.write({ digest, ...c }));
    t.same([e.code, e.reason], ["INVALID_ARGUMENT", "invalid_chunk"], name);
  }
  t.same(await cache.missing([digest]), [{ digest, have: 0 }], "nothing was written");
});

t.test("a zero-byte blob is one empty write", async (t) => {
  const dir = t.testdir({});
  const cache = new BlobCache(dir);
  const digest = `sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`;
  t.equal(digestOf(new Uint8Array()), digest);
  t.same(await cache.write({ digest, size: 0, offset: 0, data: new Uint8Array() }), { have: 0, complete: true });
  const path = await cache.path(digest);
  t.equal(path, completeFile(dir, digest));
  t.equal(statSync(path!).size, 0);
  t.same(await cache.missing([digest]), []);
});

t.test("the same chunk written many times at once lands once", async (t) => {
  const dir = t.testdir({});
  const cache = new BlobCache(dir);
  const blob = randomBytes(3 * BLOB_CHUNK_BYTES);
  const digest = digestOf(blob);
  const chunk = (i: number) =>
    cache.write({
      digest,
      size: blob.length,
      offset: i * BLOB_CHUNK_BYTES,
      data: blob.subarray(i * BLOB_CHUNK_BYTES, (i + 1) * BLOB_CHUNK_BYTES),
    });
  const first = await Promise.all(Array.from({ length: 8 }, () => chunk(0)));
  t.same(
    first.map((r) => r.have),
    Array(8).fill(BLOB_CHUNK_BYTES),
    "every writer hears the same length",
  );
  t.equal(statSync(partialFile(dir, digest)).size, BLOB_CHUNK_BYTES, "the chunk was appended once");
  const rest = await Promise.all([chunk(2), chunk(1), chunk(1), chunk(2), chunk(2)]);
  t.ok(
    rest.every((r) => r.have >= BLOB_CHUNK_BYTES),
    "out-of-order writers are answered, not failed",
  );
  const done = await chunk(2);
  t.same(done, { have: blob.length, complete: true });
  t.ok(readFileSync((await cache.path(digest))!).equals(blob), "no interleaved or doubled bytes");
});

t.test("different blobs are written in parallel without mixing", async (t) => {
  const dir = t.testdir({});
  const cache = new BlobCache(dir);
  const blobs = Array.from({ length: 4 }, (_, i) => randomBytes(BLOB_CHUNK_BYTES * 2 + i));
  await Promise.all(blobs.map((b) => send(cache, b)));
  for (const b of blobs) t.ok(readFileSync((await cache.path(digestOf(b)))!).equals(b));
});

t.test("a partial left by a larger claimed size is replaced only by a sender starting over", async (t) => {
  const dir = t.testdir({});
  const cache = new BlobCache(dir);
  const blob = randomBytes(1000);
  const digest = digestOf(blob);
  await cache.write({ digest, size: 5000, offset: 0, data: randomBytes(2000) });
  const resumed = { digest, size: blob.length, offset: 500, data: blob.subarray(500) };
  t.same(await cache.write(resumed), { have: 0, complete: false }, "told to start from 0");
  t.equal(statSync(partialFile(dir, digest)).size, 2000, "nothing changed yet");
  t.same(await cache.write({ digest, size: blob.length, offset: 0, data: blob }), { have: 1000, complete: true });
  t.ok(readFileSync((await cache.path(digest))!).equals(blob));
});

t.test("a full partial blob (a crash before the rename) is verified by the next write", async (t) => {
  const dir = t.testdir({});
  const blob = randomBytes(100);
  const digest = digestOf(blob);
  await new BlobCache(dir).write({ digest, size: 200, offset: 0, data: randomBytes(1) });
  writeFileSync(partialFile(dir, digest), blob);
  const cache = new BlobCache(dir);
  t.same(await cache.write({ digest, size: blob.length, offset: 0, data: blob.subarray(0, 10) }), {
    have: blob.length,
    complete: true,
  });
  t.ok(readFileSync((await cache.path(digest))!).equals(blob));
});

t.test("cached blobs are owner-only: files 0600, directories 0700", async (t) => {
  const dir = t.testdir({});
  const cache = new BlobCache(dir);
  const blob = randomBytes(BLOB_CHUNK_BYTES + 1);
  const other = randomBytes(10);
  await send(cache, blob);
  await cache.write({ digest: digestOf(other), size: 20, offset: 0, data: other });
  const mode = (p: string) => statSync(p).mode & 0o777;
  for (const d of ["blobs", "blobs/sha256", "blobs/partial"]) t.equal(mode(join(dir, d)), 0o700, d);
  t.equal(mode(completeFile(dir, digestOf(blob))), 0o600, "a complete blob");
  t.equal(mode(partialFile(dir, digestOf(other))), 0o600, "a partial blob");
  t.same(readdirSync(join(dir, "blobs")).sort(), ["partial", "sha256"], "nothing else");
});

import t from "tap";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { STATE_FEATURES_ATTRIBUTE } from "@orch/contracts";
import { BlobCache } from "../src/blobs/cache.js";
import { MAX_WRITE_BYTES } from "../src/blobs/chunk-rules.js";
import { scratch, stateHarness } from "./state-harness.js";

// `file` resources with `source: sha256:…` through the served Execute handler, on real files, with
// blobs put into the agent's real cache (its data directory) the way the link puts them there.

const dataDir = scratch(t, "orch-agent-data-");
const h = await stateHarness(dataDir);
const cache = new BlobCache(dataDir);

const hex = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const digestOf = (b: Uint8Array) => `sha256:${hex(b)}`;

/** Sends a blob into the cache in the largest chunks it takes; returns its digest. */
async function cacheBlob(blob: Buffer): Promise<string> {
  const digest = digestOf(blob);
  for (let offset = 0; offset < blob.length; offset += MAX_WRITE_BYTES)
    await cache.write({ digest, size: blob.length, offset, data: blob.subarray(offset, offset + MAX_WRITE_BYTES) });
  const path = await cache.path(digest);
  if (path === undefined) throw new Error(`${digest} did not reach the cache`);
  return digest;
}

/** One file resource, planned or applied alone. */
async function run(mode: "plan" | "apply", spec: Record<string, string>, mask: string[] = []) {
  const [r] = await h.execute(mode, [{ id: "app", type: "file", spec }], { mask });
  if (!r) throw new Error("no result");
  return r;
}

t.test("the agent says it takes file sources: state_features lists blobs next to triggers", async (t) => {
  t.same(h.attributes.get(STATE_FEATURES_ATTRIBUTE)?.split(",").sort(), ["archive", "blobs", "triggers"]);
});

t.test("a new file from a blob: plan without the blob, apply once it is cached, then nothing to do", async (t) => {
  const dir = scratch(t);
  const path = join(dir, "app.bin");
  const blob = Buffer.concat([randomBytes(3000), Buffer.from([0, 1, 2])]);
  const digest = digestOf(blob);
  const spec = { path, source: digest, mode: "0755" };

  const early = await run("plan", spec);
  t.equal(early.status, "changed", early.message);
  t.equal(early.diff, `# create file (mode 0755)\ncontent (none) -> ${digest}\n`, "no size: not cached yet");
  t.same(readdirSync(dir), [], "plan wrote nothing");

  await cacheBlob(blob);
  const plan = await run("plan", spec);
  t.equal(plan.diff, `# create file (mode 0755)\ncontent (none) -> ${digest} (${blob.length} bytes)\n`);

  const apply = await run("apply", spec);
  t.equal(apply.status, "changed", apply.message);
  t.equal(apply.message, "created");
  t.ok(readFileSync(path).equals(blob), "the exact bytes");
  t.equal(statSync(path).mode & 0o7777, 0o755);
  t.same(readdirSync(dir), ["app.bin"], "no temp file left");
  t.equal(apply.observed?.sha256, hex(blob));
  t.equal(apply.observed?.size, blob.length);

  for (const mode of ["plan", "apply"] as const) {
    const again = await run(mode, spec);
    t.same([again.status, again.changed, again.diff], ["ok", false, ""], `${mode} again: nothing to change`);
  }
});

t.test("another digest: changed, summarised by hashes; the apply replaces the bytes", async (t) => {
  const dir = scratch(t);
  const path = join(dir, "app.bin");
  const v1 = randomBytes(5000);
  const v2 = randomBytes(5000);
  const v3 = randomBytes(7000);
  await run("apply", { path, source: await cacheBlob(v1) });
  t.equal(statSync(path).mode & 0o7777, 0o644, "a new file without a mode is 0644");

  const sameSize = await run("plan", { path, source: digestOf(v2) });
  t.equal(sameSize.status, "changed");
  t.equal(sameSize.diff, `content sha256:${hex(v1)} (5000 bytes) -> ${digestOf(v2)}\n`);

  await cacheBlob(v3);
  const bigger = await run("plan", { path, source: digestOf(v3) });
  t.equal(bigger.diff, `content (5000 bytes) -> ${digestOf(v3)} (7000 bytes)\n`, "settled by size, no hashing");

  await cacheBlob(v2);
  const apply = await run("apply", { path, source: digestOf(v2) });
  t.equal(apply.status, "changed", apply.message);
  t.equal(apply.message, "content updated");
  t.ok(readFileSync(path).equals(v2));
});

t.test("a replaced file keeps its unmanaged mode; a mode alone is an attribute change", async (t) => {
  const dir = scratch(t);
  const path = join(dir, "tool");
  writeFileSync(path, "old", { mode: 0o700 });
  const blob = randomBytes(100);
  const digest = await cacheBlob(blob);
  t.equal((await run("apply", { path, source: digest })).status, "changed");
  t.equal(statSync(path).mode & 0o7777, 0o700);

  const chmod = await run("apply", { path, source: digest, mode: "0750" });
  t.equal(chmod.message, "attributes updated");
  t.match(chmod.diff, /mode 0700 -> 0750/);
  t.notMatch(chmod.diff, /content/, "the content is unchanged");
  t.equal(statSync(path).mode & 0o7777, 0o750);
});

t.test("apply of a blob the cache lacks fails clearly and leaves the target untouched", async (t) => {
  const dir = scratch(t);
  const path = join(dir, "app.bin");
  writeFileSync(path, "current bytes\n", { mode: 0o640 });
  const digest = digestOf(randomBytes(64));
  const r = await run("apply", { path, source: digest });
  t.equal(r.status, "failed");
  t.equal(r.message, `blob ${digest} is not in this agent's cache: the server sends it before an apply`);
  t.equal(readFileSync(path, "utf8"), "current bytes\n");
  t.equal(statSync(path).mode & 0o7777, 0o640);

  const fresh = await run("apply", { path: join(dir, "new.bin"), source: digest });
  t.equal(fresh.status, "failed");
  t.same(readdirSync(dir), ["app.bin"], "no file created, no temp file left");
});

t.test("a cached blob altered after it was verified is never written", async (t) => {
  const dir = scratch(t);
  const path = join(dir, "app.bin");
  writeFileSync(path, "current bytes\n");
  const blob = randomBytes(2 * MAX_WRITE_BYTES + 17);
  const digest = await cacheBlob(blob);
  const cached = (await cache.path(digest))!;
  const tampered = Buffer.concat([blob.subarray(0, -1), Buffer.from([(blob.at(-1) ?? 0) ^ 0xff])]);
  writeFileSync(cached, tampered);

  const r = await run("apply", { path, source: digest });
  t.equal(r.status, "failed");
  t.match(r.message, `the cached blob ${digest} does not match its digest (its bytes hash to ${digestOf(tampered)})`);
  t.equal(readFileSync(path, "utf8"), "current bytes\n", "target untouched");
  t.same(readdirSync(dir), ["app.bin"], "the temp copy was removed");
  t.equal(await cache.path(digest), undefined, "dropped from the cache: the server sends it again");
  t.same(await cache.missing([digest]), [{ digest, have: 0 }]);

  const fresh = await run("apply", { path: join(dir, "new.bin"), source: digest });
  t.equal(fresh.status, "failed");
  t.match(fresh.message, "is not in this agent's cache");
  t.notOk(existsSync(join(dir, "new.bin")), "no new file either");
});

t.test("malformed sources fail the resource with a message naming the field", async (t) => {
  const dir = scratch(t);
  const path = join(dir, "app.bin");
  const digest = digestOf(Buffer.from("x"));
  const both = await run("apply", { path, source: digest, content: "x" });
  t.equal(both.status, "failed");
  t.match(both.message, /fields "content" and "source" are mutually exclusive/);
  for (const bad of ["sha256:abc", digest.toUpperCase().replace("SHA256", "sha256"), `md5:${hex(Buffer.from("x"))}`]) {
    const r = await run("plan", { path, source: bad });
    t.equal(r.status, "failed", bad);
    t.match(r.message, /^field "source" must be a blob digest: sha256: and 64 lowercase hex digits/);
  }
  t.same(readdirSync(dir), []);
});

t.test("state absent with a source removes the file; the blob need not be cached", async (t) => {
  const dir = scratch(t);
  const path = join(dir, "app.bin");
  const old = Buffer.concat([Buffer.from([0]), randomBytes(299)]); // binary: summarised, whatever the bytes
  writeFileSync(path, old);
  const spec = { path, source: digestOf(randomBytes(8)), state: "absent" };
  const plan = await run("plan", spec);
  t.equal(plan.diff, `content sha256:${hex(old)} (300 bytes) -> (none)\n`);
  const r = await run("apply", spec);
  t.equal(r.status, "changed", r.message);
  t.equal(r.message, "removed");
  t.notOk(existsSync(path));
  t.equal((await run("apply", spec)).status, "ok");
});

t.test("a 20 MiB blob is copied, observed and compared as a stream", async (t) => {
  const dir = scratch(t);
  const path = join(dir, "big.bin");
  const blob = randomBytes(20 * 1024 * 1024);
  const digest = await cacheBlob(blob);
  const r = await run("apply", { path, source: digest, mode: "0755" });
  t.equal(r.status, "changed", r.message);
  t.equal(statSync(path).size, blob.length);
  t.equal(hex(readFileSync(path)), hex(blob));
  t.equal(r.observed?.sha256, hex(blob));
  t.equal((await run("plan", { path, source: digest, mode: "0755" })).status, "ok");

  const removal = await run("plan", { path, state: "absent" });
  t.equal(removal.diff, `content sha256:${hex(blob)} (${blob.length} bytes) -> (none)\n`, "big: hashed, not diffed");
});

t.test("the parent directory must exist", async (t) => {
  const dir = scratch(t);
  const r = await run("apply", { path: join(dir, "nope", "app.bin"), source: await cacheBlob(randomBytes(10)) });
  t.equal(r.status, "failed");
  t.match(r.message, /parent directory .*nope does not exist/);
});

t.test("a blob holds no secret: it unseals a path a secret was written to, and never seals one", async (t) => {
  const dir = scratch(t);
  const path = join(dir, "app.conf");
  const SECRET = "blob-test-S3cret";
  const secretFile = await run("apply", { path, content: `password=${SECRET}\n` }, [SECRET]);
  t.equal(secretFile.observed?.sealed, true, "sealed by the secret");

  // A NUL keeps it binary: summarised, never line-diffed.
  const blob = Buffer.concat([Buffer.from([0]), randomBytes(39)]);
  const digest = await cacheBlob(blob);
  const plan = await run("plan", { path, source: digest });
  t.equal(
    plan.diff,
    `content ${SECRET.length + 10} bytes -> 40 bytes (not shown: the file holds content rendered from a secret)\n`,
  );
  t.notOk("sha256" in (plan.observed ?? {}), "no hash of the secret file");
  t.equal((await run("apply", { path, source: digest })).status, "changed");
  const after = await run("plan", { path, content: "plain\n" });
  t.equal(after.diff, `content sha256:${hex(blob)} (40 bytes) -> sha256:${hex(Buffer.from("plain\n"))} (6 bytes)\n`);

  const other = join(dir, "other.bin");
  const mentioning = await run("apply", { path: other, source: digest, owner: "root" }, ["root"]);
  t.equal(mentioning.status, "changed", mentioning.message);
  t.notOk(mentioning.observed?.sealed, "a spec mentioning a secret writes none from a blob");
  t.equal((await run("plan", { path: other, source: digest })).observed?.sha256, hex(blob), "not sealed afterwards");
});

import t from "tap";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { BLOB_CHUNK_BYTES, BlobsMissingRequestSchema, WriteBlobChunkRequestSchema } from "@orch/contracts";
import { BlobCache } from "../src/blobs/cache.js";
import { DEFAULT_BLOB_CACHE_MAX_BYTES } from "../src/blobs/evict.js";
import { blobHandlers } from "../src/blobs/feature.js";
import { createAgentLogger } from "../src/log.js";
import { UsageError, USAGE, parseOptions } from "../src/options.js";
import { AgentError } from "../src/runtime.js";

// The blob cache's size cap against a real directory, filled through AgentBlobService's handlers
// as the link calls them (BlobsMissing for an apply's blobs, then WriteBlobChunk). A fake clock
// stands in for time: each "apply" happens an hour after the last, past the previous one's pins.
// The choice logic alone is blobs-evict.unit.test.ts.

const HOUR = 3_600_000;
const T0 = Date.parse("2030-01-01T00:00:00Z");
const digestOf = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
const hexOf = (digest: string) => digest.slice("sha256:".length);
const completeFile = (dir: string, digest: string) => join(dir, "blobs", "sha256", hexOf(digest));
const partialFile = (dir: string, digest: string) => join(dir, "blobs", "partial", hexOf(digest));
const usedAt = (file: string) => Math.round(statSync(file).mtimeMs);

/** Bytes under blobs/, complete and partial: what the cap bounds. */
function cacheBytes(dir: string): number {
  let n = 0;
  for (const sub of ["sha256", "partial"]) {
    const d = join(dir, "blobs", sub);
    if (existsSync(d)) for (const f of readdirSync(d)) n += statSync(join(d, f)).size;
  }
  return n;
}

/** An agent's blob side over `dir`: the handlers the link serves, a fake clock, its log lines. */
function agentOver(dir: string, maxBytes: number, clock: { now: number }) {
  const lines: Array<Record<string, unknown>> = [];
  const log = createAgentLogger("info", (l) => void lines.push(JSON.parse(l) as Record<string, unknown>));
  const cache = new BlobCache(dir, { maxBytes, log, now: () => clock.now });
  const h = blobHandlers(cache);
  /** The deadline the state service sends: the operation's (a minute here, so pins last the 10-minute floor). */
  const ctx = () => ({ deadline: clock.now + 60_000 });
  /** Sends `blob` (or its first `upTo` bytes: a cut-off transfer) from `from`; returns the last answer. */
  async function send(blob: Buffer, from = 0, upTo = blob.length) {
    let last = { have: BigInt(from), complete: false };
    for (let off = from; off < upTo; off += BLOB_CHUNK_BYTES) {
      const data = blob.subarray(off, Math.min(off + BLOB_CHUNK_BYTES, upTo));
      const req = { digest: digestOf(blob), size: BigInt(blob.length), offset: BigInt(off), data };
      const r = await h.writeBlobChunk(create(WriteBlobChunkRequestSchema, req), ctx());
      last = { have: r.have ?? 0n, complete: r.complete ?? false };
    }
    return last;
  }
  /** One apply's shipment, the way the state service does it: BlobsMissing, then what is missing. */
  async function ship(blobs: Buffer[], cutOffAt?: number) {
    const digests = blobs.map(digestOf);
    const r = await h.blobsMissing(create(BlobsMissingRequestSchema, { digests }), ctx());
    for (const m of r.missing ?? []) {
      const blob = blobs[digests.indexOf(m.digest!)]!;
      await send(blob, Number(m.have), cutOffAt ?? blob.length);
    }
  }
  return { cache, lines, send, ship };
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

t.test("over the cap, least recently used go first; a blob handed to a provider lately is kept", async (t) => {
  const dir = t.testdir({});
  const clock = { now: T0 };
  const agent = agentOver(dir, 1000, clock);
  const [a, b, c, d, e] = Array.from({ length: 5 }, () => randomBytes(300));
  for (const blob of [a, b, c]) {
    clock.now += HOUR;
    await agent.ship([blob!]);
  }
  t.same(
    [a, b, c].map((x) => usedAt(completeFile(dir, digestOf(x!)))),
    [T0 + HOUR, T0 + 2 * HOUR, T0 + 3 * HOUR],
    "a blob's use is its file's mtime: when it completed",
  );
  t.equal(cacheBytes(dir), 900, "under the cap: nothing evicted");
  t.same(agent.lines, []);

  // An apply reads a through the state feature's own instance (no cap: it only reads).
  clock.now += HOUR;
  const reader = new BlobCache(dir, { now: () => clock.now });
  t.equal(await reader.path(digestOf(a!)), completeFile(dir, digestOf(a!)));
  t.equal(usedAt(completeFile(dir, digestOf(a!))), T0 + 4 * HOUR, "path() counts as a use");

  clock.now += HOUR;
  await agent.ship([d!]);
  t.notOk(existsSync(completeFile(dir, digestOf(b!))), "b, the least recently used, is evicted");
  for (const [name, x] of [
    ["a (used lately)", a],
    ["c", c],
    ["d (just completed)", d],
  ] as const)
    t.ok(existsSync(completeFile(dir, digestOf(x!))), `${name} is kept`);
  t.equal(cacheBytes(dir), 900, "the total is under the cap after the pass");
  t.match(agent.lines, [
    {
      level: "info",
      msg: "blob cache: least recently used blobs evicted",
      evicted: 1,
      partials_dropped: 0,
      freed_bytes: 300,
      cache_bytes: 900,
      max_bytes: 1000,
    },
  ]);
  t.same(
    await agent.cache.missing([digestOf(b!)]),
    [{ digest: digestOf(b!), have: 0 }],
    "an evicted blob is missing again: the next apply that needs it gets it sent",
  );

  clock.now += HOUR;
  await agent.ship([e!]);
  t.notOk(existsSync(completeFile(dir, digestOf(c!))), "then c, next in use order");
  t.same(
    [a, d, e].map((x) => existsSync(completeFile(dir, digestOf(x!)))),
    [true, true, true],
  );
  t.equal(agent.lines.length, 2, "one line per pass that evicted");
});

t.test("an apply's blobs never evict each other: the cached ones it names are pinned", async (t) => {
  const dir = t.testdir({});
  const clock = { now: T0 };
  const agent = agentOver(dir, 1000, clock);
  const [a, b, c, n] = Array.from({ length: 4 }, () => randomBytes(300));
  for (const blob of [a, b, c]) {
    clock.now += HOUR;
    await agent.ship([blob!]);
  }
  // a is the least recently used; this apply needs it and a new blob.
  clock.now += HOUR;
  await agent.ship([a!, n!]);
  t.ok(existsSync(completeFile(dir, digestOf(a!))), "a, named by the apply, stays");
  t.ok(existsSync(completeFile(dir, digestOf(n!))), "n, just completed, stays");
  t.notOk(existsSync(completeFile(dir, digestOf(b!))), "b, the oldest not in the apply, goes instead");
  t.equal(usedAt(completeFile(dir, digestOf(a!))), clock.now, "BlobsMissing counts as a use of a cached blob");
  t.equal(cacheBytes(dir), 900);
});

t.test("one apply whose blobs exceed the cap fails clearly, evicting nothing of its own", async (t) => {
  const dir = t.testdir({});
  const clock = { now: T0 + HOUR };
  const agent = agentOver(dir, 1000, clock);
  const [old, p, q] = [randomBytes(300), randomBytes(600), randomBytes(600)];
  await agent.ship([old]);
  clock.now += HOUR;
  const e = await refusal(agent.ship([p, q]));
  t.same([e.code, e.reason], ["RESOURCE_EXHAUSTED", "resource_exhausted"]);
  t.match(e.message, `blob ${digestOf(q)} (600 bytes) does not fit`);
  t.match(e.message, "at least 1200 bytes, more than its cap of 1000 bytes (--blob-cache-max-bytes)");
  t.ok(existsSync(completeFile(dir, digestOf(p))), "p, shipped first, is cached");
  t.notOk(existsSync(partialFile(dir, digestOf(q))), "not a byte of q was written");
  t.ok(existsSync(completeFile(dir, digestOf(old))), "old is kept: 300 + 600 fit");
  t.equal(cacheBytes(dir), 900);

  // Retrying the same apply fails the same way, without thrashing: p is still there to count.
  const again = await refusal(agent.ship([p, q]));
  t.equal(again.reason, "resource_exhausted");
  t.ok(existsSync(completeFile(dir, digestOf(p))));

  const huge = randomBytes(1001);
  const alone = await refusal(agent.send(huge));
  t.match(alone.message, "at least 1001 bytes", "a blob larger than the cap is refused even outside a shipment");
});

t.test("blobs in use by an apply in progress and the blob just completed are kept over the cap", async (t) => {
  const dir = t.testdir({});
  const clock = { now: T0 + HOUR };
  const agent = agentOver(dir, 1000, clock);
  const [x, w, v] = [randomBytes(600), randomBytes(500), randomBytes(100)];
  await agent.ship([x]); // pinned for ten minutes: its apply may still be running
  clock.now += 60_000;
  // A blob written with no BlobsMissing naming it: not pinned, only just completed.
  t.same(await agent.send(w), { have: 500n, complete: true });
  t.ok(existsSync(completeFile(dir, digestOf(x))), "x is pinned by its apply");
  t.ok(existsSync(completeFile(dir, digestOf(w))), "w was just completed");
  t.equal(cacheBytes(dir), 1100, "over the cap: everything in it is in use");
  t.match(agent.lines, [
    { level: "warn", msg: "blob cache over its cap: all it holds is in use by applies", over_cap_bytes: 100 },
  ]);

  clock.now += HOUR; // x's apply is over
  await agent.ship([v]);
  t.notOk(existsSync(completeFile(dir, digestOf(x))), "once its pin expired, x (least recently used) goes");
  t.same(
    [w, v].map((b) => existsSync(completeFile(dir, digestOf(b)))),
    [true, true],
  );
  t.equal(cacheBytes(dir), 600);
});

t.test("partial transfers count toward the total; one untouched for a day is dropped", async (t) => {
  const dir = t.testdir({});
  const clock = { now: T0 };
  const agent = agentOver(dir, 1000, clock);
  const [s, a, p, b, c] = [randomBytes(200), randomBytes(300), randomBytes(800), randomBytes(300), randomBytes(10)];
  clock.now += HOUR;
  await agent.ship([s], 100); // cut off after 100 bytes
  clock.now += HOUR;
  await agent.ship([a]);
  clock.now += HOUR;
  await agent.ship([p], 500);
  t.equal(cacheBytes(dir), 900, "two partials (100 + 500) and a blob (300)");
  t.equal(usedAt(partialFile(dir, digestOf(p))), clock.now, "a partial's use is its last chunk");

  clock.now += HOUR;
  await agent.ship([b]);
  t.notOk(existsSync(partialFile(dir, digestOf(s))), "the oldest partial goes first");
  t.notOk(existsSync(completeFile(dir, digestOf(a))), "then a: 300 complete bytes alone were under the cap");
  t.ok(existsSync(partialFile(dir, digestOf(p))), "the newer partial stays, to resume");
  t.equal(cacheBytes(dir), 800);
  t.match(agent.lines.at(-1), { evicted: 1, partials_dropped: 1, freed_bytes: 400, cache_bytes: 800 });

  clock.now += 25 * HOUR;
  await agent.ship([c]);
  t.notOk(
    existsSync(partialFile(dir, digestOf(p))),
    "a partial a day old is dropped though the cache is under its cap",
  );
  t.equal(cacheBytes(dir), 310);
  t.match(agent.lines.at(-1), { evicted: 0, partials_dropped: 1, freed_bytes: 500 });
  t.same(await agent.cache.missing([digestOf(p)]), [{ digest: digestOf(p), have: 0 }], "its transfer starts over");
});

t.test("a restarted agent reads the use order from the files", async (t) => {
  const dir = t.testdir({});
  const clock = { now: T0 };
  const [a, b, c, d] = Array.from({ length: 4 }, () => randomBytes(300));
  const first = agentOver(dir, 1000, clock);
  for (const blob of [a, b, c]) {
    clock.now += HOUR;
    await first.ship([blob!]);
  }
  clock.now += HOUR;
  await new BlobCache(dir, { now: () => clock.now }).path(digestOf(a!)); // an apply read a

  clock.now += HOUR;
  const restarted = agentOver(dir, 1000, clock);
  await restarted.ship([d!]);
  t.notOk(existsSync(completeFile(dir, digestOf(b!))), "b was the least recently used before the restart");
  t.ok(existsSync(completeFile(dir, digestOf(a!))), "a's use before the restart still counts");
  t.equal(cacheBytes(dir), 900);
});

t.test("0 means no cap", async (t) => {
  const dir = t.testdir({});
  const clock = { now: T0 };
  const agent = agentOver(dir, 0, clock);
  const blobs = Array.from({ length: 5 }, () => randomBytes(2 * BLOB_CHUNK_BYTES + 1));
  for (const blob of blobs) {
    clock.now += HOUR;
    await agent.ship([blob]);
  }
  t.equal(cacheBytes(dir), 5 * blobs[0]!.length);
  t.same(agent.lines, []);
});

t.test("--blob-cache-max-bytes / ORCH_AGENT_BLOB_CACHE_MAX_BYTES", async (t) => {
  const parse = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseOptions(["--server", "h:1", ...argv], env);
  t.equal(DEFAULT_BLOB_CACHE_MAX_BYTES, 4 * 1024 ** 3);
  t.match(parse([]), { blobCacheMaxBytes: DEFAULT_BLOB_CACHE_MAX_BYTES }, "4 GiB by default");
  t.match(parse(["--blob-cache-max-bytes", "1048576"]), { blobCacheMaxBytes: 1048576 });
  t.match(parse([], { ORCH_AGENT_BLOB_CACHE_MAX_BYTES: "0" }), { blobCacheMaxBytes: 0 }, "0 = no cap");
  t.match(parse([], { ORCH_AGENT_BLOB_CACHE_MAX_BYTES: "" }), { blobCacheMaxBytes: DEFAULT_BLOB_CACHE_MAX_BYTES });
  t.match(
    parse(["--blob-cache-max-bytes=5"], { ORCH_AGENT_BLOB_CACHE_MAX_BYTES: "7" }),
    { blobCacheMaxBytes: 5 },
    "the flag wins",
  );
  for (const bad of ["-1", "1.5", "4G", "", " "]) {
    const err = (() => {
      try {
        parse([`--blob-cache-max-bytes=${bad}`]);
      } catch (e) {
        return e;
      }
    })();
    t.ok(err instanceof UsageError, `refused: ${JSON.stringify(bad)}`);
    t.match((err as Error).message, "--blob-cache-max-bytes must be an integer between 0 and");
  }
  t.match(USAGE, /--blob-cache-max-bytes N .*\n.*ORCH_AGENT_BLOB_CACHE_MAX_BYTES/);
});

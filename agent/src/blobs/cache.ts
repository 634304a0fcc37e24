import type { Stats } from "node:fs";
import { mkdir, open, readdir, rename, stat, unlink, utimes } from "node:fs/promises";
import { join } from "node:path";
import { AgentError, type AgentLogger } from "../runtime.js";
import { type BlobChunk, checkChunk, hexOf } from "./chunk-rules.js";
import {
  type CacheEntry,
  chooseEvictions,
  liveShipments,
  pinnedHexes,
  pinUntil,
  type Shipment,
  shipmentOverCap,
} from "./evict.js";
import { fsyncPath, sha256OfFile } from "./file-digest.js";
import { createKeyQueue } from "./key-queue.js";

export type { BlobChunk } from "./chunk-rules.js";

/** A blob the cache lacks, and how many of its bytes a cut-off transfer left (the offset to resume from). */
export interface MissingBlob {
  digest: string;
  have: number;
}

export interface ChunkResult {
  /** Bytes held after this write: the next offset the sender should use. */
  have: number;
  complete: boolean;
}

export interface BlobCacheOptions {
  /**
   * Cap on the bytes under `blobs/`, complete and partial (--blob-cache-max-bytes); 0 or absent:
   * no cap. Only the instance that takes writes (blobsFeature) needs one.
   */
  maxBytes?: number | undefined;
  /** Where a pass that evicted something says so. */
  log?: AgentLogger | undefined;
  /** Unix ms; tests move it instead of sleeping. */
  now?: () => number;
}

/**
 * The agent's content-addressed blob cache under `<dataDir>/blobs/`: `sha256/<hex>` holds verified
 * blobs only, `partial/<hex>` a transfer in progress. A blob enters `sha256/` by rename after its
 * hash matched, so a reader of `path()` never sees unverified or half-written bytes.
 *
 * With a cap (`maxBytes`), the blob that completes a transfer starts a pass that deletes least
 * recently used files until the total fits (evict.ts decides). A file's mtime is its last use: set
 * when a chunk lands, when the blob completes, when `path()` hands it to a provider and when
 * `missing()` names it; so the order survives a restart and the state feature's own instance (it
 * only reads) records use without sharing memory with this one.
 *
 * Protecting an apply's blobs: the state service names all of an apply's blobs in one BlobsMissing
 * call, ships the missing ones, then runs the apply, all before the operation's deadline. That call
 * pins every blob it names (cached or not) until that deadline (evict.ts pinUntil), so blobs of
 * one apply never evict each other, and an apply still reading its blobs never loses them to the
 * next shipment. A time window ("used in the last N minutes") would need N to outlast the longest
 * shipment plus apply, which the agent cannot know; the deadline is exactly that. Pins are in
 * memory: a restart ends the operations that held them. When one shipment's blobs alone exceed the
 * cap, evicting cannot help: the first chunk of the blob that tips it over is refused
 * (RESOURCE_EXHAUSTED, the operation fails saying so) before any of its bytes are written, instead
 * of caching blobs that would have to push each other out. Pins of several applies in progress
 * that together exceed the cap are tolerated: the cache stays over it until they expire.
 */
export class BlobCache {
  private readonly completeDir: string;
  private readonly partialDir: string;
  private readonly maxBytes: number;
  private readonly log: AgentLogger | undefined;
  private readonly now: () => number;
  /** Chunks of one blob append to one file: they must not interleave. */
  private readonly serial = createKeyQueue();
  /** One eviction pass at a time. */
  private readonly passes = createKeyQueue();
  /** The BlobsMissing calls whose pins have not expired (pruned as new ones come). */
  private shipments: Shipment[] = [];
  /** Blobs completed whose own pass has not finished: no pass may take them. */
  private readonly completing = new Set<string>();

  constructor(dataDir: string, opts: BlobCacheOptions = {}) {
    const root = join(dataDir, "blobs");
    this.completeDir = join(root, "sha256");
    this.partialDir = join(root, "partial");
    this.maxBytes = opts.maxBytes ?? 0;
    this.log = opts.log;
    this.now = opts.now ?? Date.now;
  }

  /**
   * The blobs among `digests` not complete here, in the order asked, each once. The digests are
   * one shipment (an apply's blobs): those cached count as used now, and all are pinned until
   * `deadline` (the request's, which is the operation's).
   */
  async missing(digests: readonly string[], opts: { deadline?: number } = {}): Promise<MissingBlob[]> {
    // All digests are checked before any answer, so a bad one never yields a partial list.
    const unique = [...new Set(digests)].map((digest) => ({ digest, hex: hexOf(digest) }));
    const now = this.now();
    const sizes = new Map<string, number | undefined>();
    const out: MissingBlob[] = [];
    for (const { digest, hex } of unique) {
      const size = await lengthOf(this.completePath(hex));
      sizes.set(hex, size);
      if (size !== undefined) {
        await markUsed(this.completePath(hex), now);
        continue;
      }
      out.push({ digest, have: (await lengthOf(this.partialPath(hex))) ?? 0 });
    }
    if (sizes.size > 0)
      this.shipments = [...liveShipments(this.shipments, now), { until: pinUntil(now, opts.deadline), sizes }];
    return out;
  }

  /** The file of a complete, verified blob (used now), or undefined when the cache lacks it. */
  async path(digest: string): Promise<string | undefined> {
    const file = this.completePath(hexOf(digest));
    if ((await lengthOf(file)) === undefined) return undefined;
    await markUsed(file, this.now());
    return file;
  }

  /** Removes a complete blob (found changed since it was verified); a missing one is no error. */
  async discard(digest: string): Promise<void> {
    await unlink(this.completePath(hexOf(digest))).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "ENOENT") throw e;
    });
  }

  /**
   * Appends a chunk when it starts where the partial blob ends; otherwise writes nothing and
   * answers with what is held, so a retried or duplicated chunk is harmless and the sender resumes
   * from `have`. The chunk that completes the blob verifies it and moves it into the cache.
   */
  async write(chunk: BlobChunk): Promise<ChunkResult> {
    const hex = checkChunk(chunk);
    this.admit(hex, chunk);
    const r = await this.serial(hex, () => this.writeInOrder(hex, chunk));
    if (r.promoted) await this.afterComplete(hex);
    return { have: r.have, complete: r.complete };
  }

  /** Refuses a chunk of a blob that cannot fit: its shipment alone would exceed the cap. */
  private admit(hex: string, c: BlobChunk): void {
    const total = shipmentOverCap(this.shipments, this.now(), hex, c.size, this.maxBytes);
    if (total === undefined) return;
    throw new AgentError(
      "RESOURCE_EXHAUSTED",
      "resource_exhausted",
      `blob ${c.digest} (${c.size} bytes) does not fit in this agent's blob cache: the blobs of this apply come to at least ${total} bytes, more than its cap of ${this.maxBytes} bytes (--blob-cache-max-bytes); raise the cap on this agent or ship fewer or smaller files`,
    );
  }

  private async writeInOrder(hex: string, c: BlobChunk): Promise<ChunkResult & { promoted?: boolean }> {
    if ((await lengthOf(this.completePath(hex))) !== undefined) return { have: c.size, complete: true };
    await mkdir(this.completeDir, { recursive: true, mode: 0o700 });
    await mkdir(this.partialDir, { recursive: true, mode: 0o700 });
    const partial = this.partialPath(hex);
    let have = (await lengthOf(partial)) ?? 0;
    if (have > c.size) {
      // Left by a transfer that claimed another size: only a sender starting over may replace it.
      if (c.offset !== 0) return { have: 0, complete: false };
      await unlink(partial);
      have = 0;
    }
    // Appending even empty data creates the file, which a zero-byte blob needs.
    if (have === c.offset) have = await appendTo(partial, c.data, this.now());
    // A full partial (the last append outran a crash or a failed rename) is verified whatever the offset.
    if (have < c.size) return { have, complete: false };
    await this.promote(hex, c.digest);
    return { have: c.size, complete: true, promoted: true };
  }

  /** The pass a completed blob starts; it never fails the write (the blob is cached either way). */
  private async afterComplete(hex: string): Promise<void> {
    this.completing.add(hex);
    try {
      await this.passes("", () => this.pass());
    } catch (err) {
      this.log?.warn({ err: (err as Error).message }, "blob cache: the pass after a blob completed failed");
    } finally {
      this.completing.delete(hex);
    }
  }

  /** Lists the cache, lets evict.ts choose, deletes what it chose, and says what it did. */
  private async pass(): Promise<void> {
    const now = this.now();
    const keep = new Set([...pinnedHexes(this.shipments, now), ...this.completing]);
    const choice = chooseEvictions({ entries: await this.entries(), maxBytes: this.maxBytes, now, keep });
    let blobs = 0;
    let partials = 0;
    let freed = 0;
    for (const e of choice.remove) {
      if (!(await this.remove(e))) continue;
      if (e.partial) partials++;
      else blobs++;
      freed += e.size;
    }
    const fields = {
      evicted: blobs,
      partials_dropped: partials,
      freed_bytes: freed,
      cache_bytes: choice.totalBefore - freed,
      max_bytes: this.maxBytes,
      ...(choice.overBy > 0 ? { over_cap_bytes: choice.overBy } : {}),
    };
    if (blobs + partials > 0) this.log?.info(fields, "blob cache: least recently used blobs evicted");
    else if (choice.overBy > 0) this.log?.warn(fields, "blob cache over its cap: all it holds is in use by applies");
  }

  /**
   * Deletes one chosen file unless it was used (or appended to) since it was listed: in its blob's
   * queue, so no chunk of it is being written meanwhile. True when it was deleted.
   */
  private async remove(e: CacheEntry): Promise<boolean> {
    const file = e.partial ? this.partialPath(e.hex) : this.completePath(e.hex);
    return await this.serial(e.hex, async () => {
      const st = await statOf(file);
      if (st === undefined || st.mtimeMs !== e.usedAt) return false;
      await unlink(file).catch(ignoreMissing);
      return true;
    });
  }

  /** Every file under `sha256/` and `partial/`, its size and last use. */
  private async entries(): Promise<CacheEntry[]> {
    const out: CacheEntry[] = [];
    for (const [dir, partial] of [
      [this.completeDir, false],
      [this.partialDir, true],
    ] as const) {
      const found = await Promise.all(
        (await namesIn(dir))
          .filter((n) => HEX_NAME.test(n))
          .map(async (hex) => {
            const st = await statOf(join(dir, hex));
            return st?.isFile() ? { hex, size: st.size, usedAt: st.mtimeMs, partial } : undefined;
          }),
      );
      for (const e of found) if (e) out.push(e);
    }
    return out;
  }

  /** Verifies the full partial blob against its digest, then makes it durable and visible. */
  private async promote(hex: string, digest: string): Promise<void> {
    const partial = this.partialPath(hex);
    const actual = await sha256OfFile(partial);
    if (actual !== digest) {
      await unlink(partial).catch(ignoreMissing);
      throw new AgentError(
        "INVALID_ARGUMENT",
        "blob_digest_mismatch",
        `the bytes received for ${digest} hash to ${actual}; they were dropped`,
      );
    }
    await fsyncPath(partial);
    await rename(partial, this.completePath(hex));
    await markUsed(this.completePath(hex), this.now());
    await fsyncPath(this.completeDir);
  }

  private completePath(hex: string): string {
    return join(this.completeDir, hex);
  }

  private partialPath(hex: string): string {
    return join(this.partialDir, hex);
  }
}

const HEX_NAME = /^[0-9a-f]{64}$/;

/** Appends `data` (creating the file, owner-only), marks it used `at`, and returns its new length. */
async function appendTo(path: string, data: Uint8Array, at: number): Promise<number> {
  const fh = await open(path, "a", 0o600);
  try {
    await fh.appendFile(data);
    await fh.utimes(new Date(at), new Date(at));
    return (await fh.stat()).size;
  } finally {
    await fh.close();
  }
}

/** A file's length, or undefined when it does not exist. */
async function lengthOf(path: string): Promise<number | undefined> {
  return (await statOf(path))?.size;
}

async function statOf(path: string): Promise<Stats | undefined> {
  try {
    return await stat(path);
  } catch (e) {
    ignoreMissing(e);
    return undefined;
  }
}

/** The names in a directory; none when it does not exist yet. */
async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (e) {
    ignoreMissing(e);
    return [];
  }
}

/**
 * Records a use of a cached file as its mtime. Best effort: a file gone meanwhile, or a file system
 * that refuses, costs only its place in the eviction order.
 */
async function markUsed(path: string, at: number): Promise<void> {
  await utimes(path, new Date(at), new Date(at)).catch(() => {});
}

function ignoreMissing(e: unknown): void {
  if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
}

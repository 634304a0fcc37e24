import { mkdir, open, rename, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { AgentError } from "../runtime.js";
import { type BlobChunk, checkChunk, hexOf } from "./chunk-rules.js";
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

/**
 * The agent's content-addressed blob cache under `<dataDir>/blobs/`: `sha256/<hex>` holds verified
 * blobs only, `partial/<hex>` a transfer in progress. A blob enters `sha256/` by rename after its
 * hash matched, so a reader of `path()` never sees unverified or half-written bytes.
 */
export class BlobCache {
  private readonly completeDir: string;
  private readonly partialDir: string;
  /** Chunks of one blob append to one file: they must not interleave. */
  private readonly serial = createKeyQueue();

  constructor(dataDir: string) {
    const root = join(dataDir, "blobs");
    this.completeDir = join(root, "sha256");
    this.partialDir = join(root, "partial");
  }

  /** The blobs among `digests` not complete here, in the order asked, each once. */
  async missing(digests: readonly string[]): Promise<MissingBlob[]> {
    // All digests are checked before any answer, so a bad one never yields a partial list.
    const unique = [...new Set(digests)].map((digest) => ({ digest, hex: hexOf(digest) }));
    const out: MissingBlob[] = [];
    for (const { digest, hex } of unique) {
      if ((await lengthOf(this.completePath(hex))) !== undefined) continue;
      out.push({ digest, have: (await lengthOf(this.partialPath(hex))) ?? 0 });
    }
    return out;
  }

  /** The file of a complete, verified blob, or undefined when the cache lacks it. */
  async path(digest: string): Promise<string | undefined> {
    const file = this.completePath(hexOf(digest));
    return (await lengthOf(file)) === undefined ? undefined : file;
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
    return await this.serial(hex, () => this.writeInOrder(hex, chunk));
  }

  private async writeInOrder(hex: string, c: BlobChunk): Promise<ChunkResult> {
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
    if (have === c.offset) have = await appendTo(partial, c.data);
    // A full partial (the last append outran a crash or a failed rename) is verified whatever the offset.
    if (have < c.size) return { have, complete: false };
    await this.promote(hex, c.digest);
    return { have: c.size, complete: true };
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
    await fsyncPath(this.completeDir);
  }

  private completePath(hex: string): string {
    return join(this.completeDir, hex);
  }

  private partialPath(hex: string): string {
    return join(this.partialDir, hex);
  }
}

/** Appends `data` (creating the file, owner-only) and returns the file's new length. */
async function appendTo(path: string, data: Uint8Array): Promise<number> {
  const fh = await open(path, "a", 0o600);
  try {
    await fh.appendFile(data);
    return (await fh.stat()).size;
  } finally {
    await fh.close();
  }
}

/** A file's length, or undefined when it does not exist. */
async function lengthOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch (e) {
    ignoreMissing(e);
    return undefined;
  }
}

function ignoreMissing(e: unknown): void {
  if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
}

import type { Queryable } from "@orch/kit";
import { blobsDb } from "./tables.js";

/** A chunk as stored: the byte offset it starts at, and its bytes. */
export type StoredChunk = { start: number; data: Buffer } | undefined;

/**
 * Chunk reads shared by the operations that ship the same blob at once. An apply to many agents
 * sends each the same chunks at about the same pace, so without sharing every chunk is read from
 * Postgres once per agent; here a read in flight is joined, and the last few chunks are kept (a
 * blob's content never changes, so nothing is ever stale). Bounded: `max` chunks of at most
 * BLOB_CHUNK_BYTES each (4 MiB at the default), whatever the blob's size or the fleet's.
 */
export interface ChunkReads {
  at(db: Queryable, contentId: string, offset: number): Promise<StoredChunk>;
}

export function createChunkReads(max = 16): ChunkReads {
  const kept = new Map<string, Promise<StoredChunk>>();
  return {
    at(db, contentId, offset) {
      const key = `${contentId}:${offset}`;
      const hit = kept.get(key);
      if (hit) {
        // Most recently used last: the oldest is dropped first.
        kept.delete(key);
        kept.set(key, hit);
        return hit;
      }
      const read = blobsDb.chunkAt(db, contentId, offset);
      kept.set(key, read);
      read.catch(() => kept.delete(key));
      while (kept.size > max) kept.delete(kept.keys().next().value!);
      return read;
    },
  };
}

import { BLOB_CHUNK_BYTES, blobHex } from "@orch/contracts";
import { AgentError } from "../runtime.js";

/** Largest blob the agent takes: far above any real module file, low enough to be exact as a number. */
export const MAX_BLOB_BYTES = 2 ** 40;

/** The agent takes a few chunks' worth in one write so a sender may batch, but never unbounded memory. */
export const MAX_WRITE_BYTES = BLOB_CHUNK_BYTES * 4;

export interface BlobChunk {
  digest: string;
  /** The whole blob's size in bytes. */
  size: number;
  /** Where `data` starts in the blob. */
  offset: number;
  data: Uint8Array;
}

/** The hex of a valid digest; throws invalid_digest otherwise. */
export function hexOf(digest: string): string {
  const hex = blobHex(digest);
  if (hex === undefined)
    throw new AgentError("INVALID_ARGUMENT", "invalid_digest", `${JSON.stringify(digest)} is not sha256:<64 hex>`);
  return hex;
}

/** Checks a chunk's numbers against each other and the limits; returns the digest's hex. */
export function checkChunk(c: BlobChunk): string {
  const hex = hexOf(c.digest);
  const refuse = (why: string) => new AgentError("INVALID_ARGUMENT", "invalid_chunk", `${c.digest}: ${why}`);
  if (!Number.isSafeInteger(c.size) || c.size < 0 || c.size > MAX_BLOB_BYTES)
    throw refuse(`size ${c.size} is not an integer from 0 to ${MAX_BLOB_BYTES}`);
  if (!Number.isSafeInteger(c.offset) || c.offset < 0) throw refuse(`offset ${c.offset} is not an integer ≥ 0`);
  if (c.data.length > MAX_WRITE_BYTES)
    throw refuse(`${c.data.length} bytes in one chunk, more than ${MAX_WRITE_BYTES}`);
  if (c.offset + c.data.length > c.size)
    throw refuse(`offset ${c.offset} + ${c.data.length} bytes goes past the size ${c.size}`);
  return hex;
}

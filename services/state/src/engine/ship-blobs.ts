import { BLOB_CHUNK_BYTES, BLOB_SOURCE_TYPES } from "@orch/contracts";
import { invalid, type Queryable } from "@orch/kit";
import type { ChunkReads } from "../blobs/chunk-reads.js";
import { blobsDb, type BlobRow } from "../blobs/tables.js";
import type { Clients } from "../deps.js";
import type { RenderedResource } from "./render.js";

/** The blobs the resources read (a file's or an archive's `source:`), each once. */
export function blobsOf(resources: readonly RenderedResource[]): string[] {
  const out = new Set<string>();
  for (const r of resources)
    if (BLOB_SOURCE_TYPES.has(r.type) && typeof r.spec?.source === "string") out.add(r.spec.source);
  return [...out];
}

/** What shipping cost: blobs and bytes sent (0 when the agent's cache had them all). */
export interface Shipped {
  blobs: number;
  bytes: number;
}

/**
 * Puts the blobs into the agent's cache before an apply: asks which it lacks and how much of each
 * a cut-off transfer left, then sends the rest in order, a chunk at a time, read from the database
 * as it goes (never a whole blob in memory). The agent verifies each blob's digest before caching
 * it; a chunk it did not expect is answered with the offset it holds, and the send resumes there.
 */
export async function shipBlobs(
  db: Queryable,
  clients: Pick<Clients, "agentBlob">,
  nodeId: string,
  digests: readonly string[],
  timeoutMs: () => number,
  reads: ChunkReads,
): Promise<Shipped> {
  const shipped: Shipped = { blobs: 0, bytes: 0 };
  if (digests.length === 0) return shipped;
  const agent = clients.agentBlob(nodeId);
  const { missing } = await agent.blobsMissing({ digests: [...digests] }, { timeoutMs: timeoutMs() });
  for (const m of missing) {
    const row = await blobsDb.get(db, m.digest);
    if (!row) throw invalid("unknown_blob", `blob ${m.digest} is not stored: upload it first`);
    shipped.bytes += await sendBlob(db, agent, row, Number(m.have), timeoutMs, reads);
    shipped.blobs++;
  }
  return shipped;
}

/** Sends `row` from `from` until the agent says it is complete; returns the bytes sent. */
async function sendBlob(
  db: Queryable,
  agent: ReturnType<Clients["agentBlob"]>,
  row: BlobRow,
  from: number,
  timeoutMs: () => number,
  reads: ChunkReads,
): Promise<number> {
  let offset = Math.min(Math.max(0, from), row.size);
  let sent = 0;
  // A chunk the agent did not take (it restarted and lost a partial, or holds more) moves the
  // offset to what it holds; several in a row without progress is a confused agent: stop.
  for (let stalls = 0; ; ) {
    const data = await readAt(db, row, offset, reads);
    const r = await agent.writeBlobChunk(
      { digest: row.digest, size: BigInt(row.size), offset: BigInt(offset), data },
      { timeoutMs: timeoutMs() },
    );
    const have = Number(r.have);
    const taken = have === offset + data.length;
    if (taken) sent += data.length;
    if (r.complete) return sent;
    if (taken) stalls = 0;
    else if (++stalls > 3) throw new Error(`agent did not take blob ${row.digest} at offset ${offset} (holds ${have})`);
    offset = have;
  }
}

/** Up to BLOB_CHUNK_BYTES of the blob from `offset` (empty at the end, or for a zero-byte blob). */
async function readAt(db: Queryable, row: BlobRow, offset: number, reads: ChunkReads): Promise<Buffer> {
  if (offset >= row.size) return Buffer.alloc(0);
  const chunk = await reads.at(db, row.content_id, offset);
  if (!chunk) throw new Error(`blob ${row.digest} has no chunk at offset ${offset}`);
  return chunk.data.subarray(offset - chunk.start, offset - chunk.start + BLOB_CHUNK_BYTES);
}

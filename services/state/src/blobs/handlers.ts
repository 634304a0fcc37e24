import type { MessageInitShape } from "@bufbuild/protobuf";
import { BLOB_CHUNK_BYTES, type BlobSchema, type StateService } from "@orch/contracts";
import { OrchError, invalid, keysetPage, notFound, pageCursor, pageLimit, type Actor, type Handlers } from "@orch/kit";
import type { Engine } from "../engine/index.js";
import { blobNotFound, deleteBlobHandler } from "./delete.js";
import { checkDigest, hashChunks } from "./digest.js";
import { blobsDb, uploadsDb, type BlobRow, type UploadRow } from "./tables.js";
import { withUploadLocked } from "./upload-lock.js";
import { adoptUpload } from "./adopt.js";

type BlobHandlers = Pick<
  Handlers<typeof StateService>,
  | "beginBlobUpload"
  | "putBlobChunk"
  | "commitBlobUpload"
  | "abortBlobUpload"
  | "getBlob"
  | "listBlobs"
  | "readBlobChunk"
  | "deleteBlob"
>;

export const blobMsg = (b: BlobRow): MessageInitShape<typeof BlobSchema> => ({
  digest: b.digest,
  size: BigInt(b.size),
  createdAt: b.created_at,
  createdBy: b.created_by,
  createdByName: b.created_by_name,
});

/** INVALID_ARGUMENT on the bus; the gateway answers the catalogue's 413 (problem.ts). */
export const tooLarge = (max: number) =>
  new OrchError("INVALID_ARGUMENT", "blob_too_large", `a blob may be at most ${max} bytes (state.blob_max_bytes)`, {
    max_bytes: max,
  });

/** An upload may only be continued by whoever started it; anyone else is told it does not exist. */
function ownUpload(up: UploadRow | undefined, id: string, actor: Actor): UploadRow {
  if (!up || up.actor_id !== actor.id) throw notFound("upload_not_found", `no blob upload ${id} is in progress`);
  return up;
}

/** Why chunk `seq` of `data.length` bytes cannot follow what the upload holds (undefined: it can). */
function chunkRefusal(up: UploadRow, seq: number, size: number, max: number): Error | undefined {
  if (seq !== up.next_seq)
    return invalid("invalid_chunk", `chunk ${seq} is out of order: chunk ${up.next_seq} comes next`, {
      expected_seq: up.next_seq,
    });
  const after = up.received + size;
  if (up.declared_size >= 0 && after > up.declared_size)
    return invalid(
      "blob_size_mismatch",
      `the upload goes past its declared size of ${up.declared_size} bytes; nothing was stored`,
      { declared_size: up.declared_size },
    );
  if (after > max) return tooLarge(max);
  return undefined;
}

export function blobHandlers(engine: Engine): BlobHandlers {
  const { pool, clock, ids, events, config } = engine.deps;
  const max = config.state.blob_max_bytes;
  return {
    deleteBlob: deleteBlobHandler(engine),
    async beginBlobUpload(req, ctx) {
      const digest = checkDigest(req.digest);
      const size = Number(req.size);
      if (!Number.isSafeInteger(size) || size < -1)
        throw invalid("invalid_chunk", "size must be the blob's length in bytes, or -1 when not known", {
          field: "size",
        });
      if (size > max) throw tooLarge(max);
      const existing = await blobsDb.get(pool, digest);
      if (existing) return { existing: blobMsg(existing), maxChunkBytes: BLOB_CHUNK_BYTES };
      const id = ids.next();
      const up = { id, digest, declared_size: size, actor_id: ctx.actor.id, actor_name: ctx.actor.name };
      await uploadsDb.insert(pool, up, clock.now());
      return { uploadId: id, maxChunkBytes: BLOB_CHUNK_BYTES };
    },

    async putBlobChunk(req, ctx) {
      const data = Buffer.from(req.data.buffer, req.data.byteOffset, req.data.byteLength);
      if (data.length === 0 || data.length > BLOB_CHUNK_BYTES)
        throw invalid("invalid_chunk", `a chunk holds 1 to ${BLOB_CHUNK_BYTES} bytes`, { max_bytes: BLOB_CHUNK_BYTES });
      await withUploadLocked(pool, req.uploadId, async (db, row) => {
        const up = ownUpload(row, req.uploadId, ctx.actor);
        // A retried chunk (its answer was lost) is taken again as long as its bytes are the same.
        if (req.seq < up.next_seq && (await uploadsDb.sameChunk(db, up.id, req.seq, data))) return;
        const refusal = chunkRefusal(up, req.seq, data.length, max);
        if (refusal) throw refusal;
        await uploadsDb.appendChunk(db, up, data, clock.now());
      });
      return {};
    },

    async commitBlobUpload(req, ctx) {
      const up = ownUpload(await uploadsDb.get(pool, req.uploadId), req.uploadId, ctx.actor);
      const refuse = async (err: Error) => {
        await uploadsDb.remove(pool, up.id, false);
        throw err;
      };
      if (up.declared_size >= 0 && up.received !== up.declared_size)
        await refuse(
          invalid(
            "blob_size_mismatch",
            `the upload ended after ${up.received} of its declared ${up.declared_size} bytes; nothing was stored`,
            { declared_size: up.declared_size, received: up.received },
          ),
        );
      // Verified over what is stored, not over what a caller says it sent.
      const actual = await hashChunks(pool, up.id);
      if (actual.digest !== up.digest)
        await refuse(
          invalid("blob_digest_mismatch", `the uploaded bytes hash to ${actual.digest}, not ${up.digest}`, {
            actual: actual.digest,
          }),
        );
      const stored = await events.tx(async (db, emit) => {
        const locked = ownUpload(await uploadsDb.lock(db, up.id), up.id, ctx.actor);
        if (locked.received !== actual.bytes)
          throw invalid("invalid_chunk", "chunks arrived while the upload was being committed");
        const row: BlobRow = {
          digest: up.digest,
          content_id: up.id,
          size: actual.bytes,
          created_at: clock.now(),
          created_by: ctx.actor.id,
          created_by_name: ctx.actor.name,
        };
        return (await adoptUpload(db, emit, row, ctx.actor)).blob;
      });
      return blobMsg(stored);
    },

    async abortBlobUpload(req, ctx) {
      const up = await uploadsDb.get(pool, req.uploadId);
      if (up && up.actor_id === ctx.actor.id) await uploadsDb.remove(pool, up.id, false);
      return {};
    },

    async getBlob(req) {
      const digest = checkDigest(req.digest);
      const row = await blobsDb.get(pool, digest);
      if (!row) throw blobNotFound(digest);
      return blobMsg(row);
    },

    async listBlobs(req) {
      const limit = pageLimit(req.limit);
      const rows = await blobsDb.page(pool, limit + 1, pageCursor(req.cursor, "digest"));
      const { page, nextCursor } = keysetPage(rows, limit, (b) => b.digest);
      return { blobs: page.map(blobMsg), nextCursor };
    },

    async readBlobChunk(req) {
      const digest = checkDigest(req.digest);
      const row = await blobsDb.get(pool, digest);
      if (!row) throw blobNotFound(digest);
      const offset = Number(req.offset);
      if (!Number.isSafeInteger(offset) || offset < 0 || offset > row.size)
        throw invalid("invalid_chunk", `offset must be within the blob's ${row.size} bytes`, { field: "offset" });
      const want = Math.min(req.maxBytes > 0 ? req.maxBytes : BLOB_CHUNK_BYTES, BLOB_CHUNK_BYTES);
      if (offset === row.size) return { data: new Uint8Array(), eof: true };
      const chunk = await blobsDb.chunkAt(pool, row.content_id, offset);
      const data = chunk ? chunk.data.subarray(offset - chunk.start, offset - chunk.start + want) : Buffer.alloc(0);
      return { data, eof: offset + data.length >= row.size };
    },
  };
}

import { notFound, type Actor, type Emit, type Queryable } from "@orch/kit";
import { blobsDb, uploadsDb, type BlobRow } from "./tables.js";

/**
 * The last step of every stored blob (an operator's upload, a git source's bundle file): the
 * upload's chunks become the blob's content, in the caller's transaction, with one blob.uploaded
 * event. The same content stored meanwhile wins: this upload's chunks are dropped and that blob is
 * answered. Returns the blob and whether this call created it.
 */
export async function adoptUpload(
  db: Queryable,
  emit: Emit,
  row: BlobRow,
  actor: Actor,
): Promise<{ blob: BlobRow; created: boolean }> {
  const created = await blobsDb.insert(db, row);
  await uploadsDb.remove(db, row.content_id, created);
  if (!created) {
    const existing = await blobsDb.get(db, row.digest);
    // Stored by another upload, then deleted before this read: the caller may simply try again.
    if (!existing)
      throw notFound(
        "upload_not_found",
        `blob ${row.digest} was deleted while this upload was being committed; upload it again`,
      );
    return { blob: existing, created: false };
  }
  await emit({
    type: "blob.uploaded",
    summary: `blob ${row.digest.slice(0, 19)}… (${row.size} bytes) uploaded by ${actor.name}`,
    actor,
    target: { id: row.digest, name: row.digest, type: "blob" },
    metadata: { digest: row.digest, size: row.size },
  });
  return { blob: row, created: true };
}

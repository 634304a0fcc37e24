import type { StateDeps } from "../deps.js";
import { BLOB_GC_ACTOR, blobDeleted } from "./delete.js";
import { blobUsers, unreferencedBlobs } from "./references.js";
import { blobsDb, uploadsDb } from "./tables.js";

/** Drops uploads cut off long enough ago (state.blob_upload_stale_seconds), with their chunks. */
export async function sweepUploads({ pool, clock, config, log }: StateDeps): Promise<void> {
  const dropped = await uploadsDb.sweep(pool, clock.now() - config.state.blob_upload_stale_seconds * 1000);
  if (dropped > 0) log.info({ dropped }, "stale blob uploads dropped");
}

/** Blobs the collector deletes per transaction. */
const GC_BATCH = 100;

/** How often the collector runs (across replicas); the grace period is days, so hourly is prompt enough. */
export const BLOB_GC_INTERVAL_MS = 3_600_000;

/**
 * Deletes blobs that no module and no kept module version names (references.ts) and that were
 * stored longer than state.blob_gc_grace_seconds ago: a blob uploaded for a module not uploaded
 * yet survives. A batch per transaction, each blob locked and asked about again in it (a module
 * naming it meanwhile keeps it; one being written right now is skipped, not waited for), one
 * blob.deleted event each. Returns how many.
 */
export async function collectBlobs({ pool, clock, config, events, log }: StateDeps): Promise<number> {
  const before = clock.now() - config.state.blob_gc_grace_seconds * 1000;
  let deleted = 0;
  for (let after = ""; ; ) {
    const batch = await unreferencedBlobs(pool, before, after, GC_BATCH);
    if (batch.length === 0) break;
    after = batch.at(-1)!;
    deleted += await events.tx(async (db) => {
      const locked = await blobsDb.lockOlder(db, batch, before);
      const used = await blobUsers(
        db,
        locked.map((b) => b.digest),
      );
      const gone = locked.filter((b) => !used.has(b.digest));
      await blobsDb.remove(db, gone);
      if (gone.length)
        await events.emitMany(
          db,
          gone.map((b) => blobDeleted(b, BLOB_GC_ACTOR, "unreferenced")),
        );
      return gone.length;
    });
    if (batch.length < GC_BATCH) break;
  }
  if (deleted > 0) log.info({ deleted }, "unreferenced blobs deleted");
  return deleted;
}

import { createHash } from "node:crypto";
import { BLOB_CHUNK_BYTES } from "@orch/contracts";
import { chunked, type Actor } from "@orch/kit";
import type { StateDeps } from "../deps.js";
import { tooLarge } from "./handlers.js";
import { adoptUpload } from "./adopt.js";
import { uploadsDb, type BlobRow, type UploadRow } from "./tables.js";

/**
 * Stores bytes the state service reads itself (a git source's bundle file) as a blob, exactly as
 * an operator's upload is stored: chunks under an upload id that becomes the blob's content once
 * they are complete, so a failure part-way leaves only rows the sweeper drops. The digest is
 * computed over the bytes as they are stored (there is no claimed digest to check).
 */
export async function storeBlobStream(
  deps: Pick<StateDeps, "pool" | "clock" | "ids" | "events" | "config">,
  source: AsyncIterable<Uint8Array>,
  actor: Actor,
): Promise<{ digest: string; size: number; created: boolean }> {
  const { pool, clock, ids, events, config } = deps;
  const max = config.state.blob_max_bytes;
  const id = ids.next();
  // The digest is known only at the end; the upload row is what lets the sweeper find the chunks.
  await uploadsDb.insert(
    pool,
    { id, digest: "", declared_size: -1, actor_id: actor.id, actor_name: actor.name },
    clock.now(),
  );
  const up: UploadRow = {
    id,
    digest: "",
    declared_size: -1,
    received: 0,
    next_seq: 0,
    touched_at: 0,
    actor_id: actor.id,
    actor_name: actor.name,
  };
  const hash = createHash("sha256");
  try {
    for await (const chunk of chunked(source, BLOB_CHUNK_BYTES)) {
      if (up.received + chunk.length > max) throw tooLarge(max);
      hash.update(chunk);
      await uploadsDb.appendChunk(pool, up, chunk, clock.now());
      up.next_seq++;
      up.received += chunk.length;
    }
  } catch (err) {
    await uploadsDb.remove(pool, id, false);
    throw err;
  }
  const digest = `sha256:${hash.digest("hex")}`;
  const row: BlobRow = {
    digest,
    content_id: id,
    size: up.received,
    created_at: clock.now(),
    created_by: actor.id,
    created_by_name: actor.name,
  };
  const { created } = await events.tx((db, emit) => adoptUpload(db, emit, row, actor));
  return { digest, size: up.received, created };
}

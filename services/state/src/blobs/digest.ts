import { createHash } from "node:crypto";
import { BLOB_DIGEST } from "@orch/contracts";
import { invalid, type Queryable } from "@orch/kit";
import { blobsDb } from "./tables.js";

/** The digest as given, or 400 invalid_digest naming `field`. */
export function checkDigest(digest: string, field = "digest"): string {
  if (!BLOB_DIGEST.test(digest))
    throw invalid("invalid_digest", `${field} must be sha256: followed by 64 lowercase hex digits`, { field });
  return digest;
}

/** Chunks read per query while hashing: 16 × 256 KiB, so memory stays at a few MiB for any size. */
const HASH_BATCH = 16;

/** SHA-256 (as a digest) and byte count of the chunks stored under `contentId`, read in order. */
export async function hashChunks(db: Queryable, contentId: string): Promise<{ digest: string; bytes: number }> {
  const hash = createHash("sha256");
  let bytes = 0;
  for (let seq = 0; ; seq += HASH_BATCH) {
    const chunks = await blobsDb.chunks(db, contentId, seq, HASH_BATCH);
    for (const c of chunks) {
      hash.update(c);
      bytes += c.length;
    }
    if (chunks.length < HASH_BATCH) break;
  }
  return { digest: `sha256:${hash.digest("hex")}`, bytes };
}

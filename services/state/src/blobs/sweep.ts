import type { StateDeps } from "../deps.js";
import { uploadsDb } from "./tables.js";

/** Drops uploads cut off long enough ago (state.blob_upload_stale_seconds), with their chunks. */
export async function sweepUploads({ pool, clock, config, log }: StateDeps): Promise<void> {
  const dropped = await uploadsDb.sweep(pool, clock.now() - config.state.blob_upload_stale_seconds * 1000);
  if (dropped > 0) log.info({ dropped }, "stale blob uploads dropped");
}

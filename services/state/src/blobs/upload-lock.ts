import { withTx, type Pool, type PoolClient } from "@orch/kit";
import { uploadsDb, type UploadRow } from "./tables.js";

/** Runs `fn` in a transaction holding the upload's row lock (chunks of one upload go one at a time). */
export function withUploadLocked<T>(
  pool: Pool,
  id: string,
  fn: (db: PoolClient, row: UploadRow | undefined) => Promise<T>,
): Promise<T> {
  return withTx(pool, async (db) => fn(db, await uploadsDb.lock(db, id)));
}

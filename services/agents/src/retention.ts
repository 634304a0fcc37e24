import type { Clock, Logger, Queryable } from "@orch/kit";
import { metricsDb } from "./db/metrics.js";

const BATCH = 10_000;

/**
 * Deletes metrics older than the retention in short batches (no long lock on a hot table). Runs
 * as the `agents.metrics_retention` periodic job, on the connection that holds the job's lock.
 */
export async function pruneMetrics(
  db: Queryable,
  deps: { clock: Clock; log: Logger; retentionDays: number },
): Promise<number> {
  let total = 0;
  const cutoff = deps.clock.now() - deps.retentionDays * 86_400_000;
  for (let n = BATCH; n === BATCH; total += n) n = await metricsDb.pruneBatch(db, cutoff, BATCH);
  if (total) deps.log.info({ deleted: total, retention_days: deps.retentionDays }, "old metrics pruned");
  return total;
}

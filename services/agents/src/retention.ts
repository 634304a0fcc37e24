import { withJobLock, type Clock, type Logger, type Pool } from "@orch/kit";
import { metricsDb } from "./db.js";

const BATCH = 10_000;

/** Deletes metrics older than the retention in short batches (no long lock on a hot table). */
export async function pruneMetrics(deps: {
  pool: Pool;
  clock: Clock;
  log: Logger;
  retentionDays: number;
}): Promise<number> {
  let total = 0;
  await withJobLock(deps.pool, "agents.metrics_retention", async (c) => {
    const cutoff = deps.clock.now() - deps.retentionDays * 86_400_000;
    for (let n = BATCH; n === BATCH; total += n) n = await metricsDb.pruneBatch(c, cutoff, BATCH);
  });
  if (total) deps.log.info({ deleted: total, retention_days: deps.retentionDays }, "old metrics pruned");
  return total;
}

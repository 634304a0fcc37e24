import { SYSTEM_ACTOR, withJobLock } from "@orch/kit";
import { retentionDb } from "./db.js";
import { effectiveRetention } from "./handlers/retention.js";
import type { Pruner } from "./prune.js";
import type { AuditDeps } from "./service.js";

const DAY_MS = 86_400_000;

export interface RetentionJob {
  /** Applies the retention now (on the replica that wins the lock); resolves with the count deleted, or null when it did not run or pruning is off. */
  runOnce(): Promise<number | null>;
  stop(): void;
}

/** Applies the effective retention at start and then every `audit.prune_interval_minutes`. */
export function startRetentionJob(deps: AuditDeps, prune: Pruner): RetentionJob {
  const runOnce = async (): Promise<number | null> => {
    let deleted: number | null = null;
    await withJobLock(deps.pool, "audit.retention", async (c) => {
      const { days } = effectiveRetention(deps, await retentionDb.get(c));
      if (days === null) return;
      deleted = await prune(deps.clock.now() - days * DAY_MS, SYSTEM_ACTOR, "retention", days);
    });
    return deleted;
  };
  const tick = () => void runOnce().catch((err) => deps.log.warn({ err: (err as Error).message }, "retention prune failed; will retry at the next interval"));
  const first = setTimeout(tick, 5_000);
  const timer = setInterval(tick, deps.config.audit.prune_interval_minutes * 60_000);
  first.unref();
  timer.unref();
  return {
    runOnce,
    stop() {
      clearTimeout(first);
      clearInterval(timer);
    },
  };
}

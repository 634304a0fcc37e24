import { SYSTEM_ACTOR, schedulePeriodic, withJobLock, type PoolClient } from "@orch/kit";
import { retentionDb } from "./db/retention.js";
import { effectiveRetention } from "./handlers/retention.js";
import type { Pruner } from "./prune.js";
import type { AuditDeps } from "./deps.js";

const DAY_MS = 86_400_000;

export interface RetentionJob {
  /** Applies the retention now (on the replica that wins the lock); resolves with the count deleted, or null when it did not run or pruning is off. */
  runOnce(): Promise<number | null>;
  stop(): void;
}

/** Applies the effective retention shortly after start and then every `audit.prune_interval_minutes`. */
export function startRetentionJob(deps: AuditDeps, prune: Pruner): RetentionJob {
  const apply = async (c: PoolClient): Promise<number | null> => {
    const { days } = effectiveRetention(deps, await retentionDb.get(c));
    if (days === null) return null;
    return prune(deps.clock.now() - days * DAY_MS, SYSTEM_ACTOR, "retention", days);
  };
  const runOnce = async (): Promise<number | null> => {
    let deleted: number | null = null;
    await withJobLock(deps.pool, "audit.retention", async (c) => {
      deleted = await apply(c);
    });
    return deleted;
  };
  // Once per period across all replicas: every run records an audit.pruned event.
  const periodic = schedulePeriodic(
    deps,
    "audit.retention",
    deps.config.audit.prune_interval_minutes * 60_000,
    async (c) => {
      await apply(c);
    },
  );
  const first = setTimeout(() => void periodic.tick(), deps.config.audit.prune_start_delay_seconds * 1000);
  first.unref();
  return {
    runOnce,
    stop() {
      clearTimeout(first);
      periodic.stop();
    },
  };
}

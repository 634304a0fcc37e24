import { schedulePeriodic } from "@orch/kit";
import type { AgentsDeps } from "./deps.js";
import { grantsDb } from "./link/grants.js";
import { pruneMetrics } from "./retention.js";
import { DEADLINE_EVERY_MS, expireUpgrades } from "./upgrades/deadline.js";

const RETENTION_EVERY_MS = 60 * 60_000;
const GRANT_PRUNE_EVERY_MS = 10 * 60_000;

/** The service's housekeeping, each job run by one replica at a time: metrics retention, expired link grants, upgrade deadlines. */
export function startPeriodicJobs(deps: AgentsDeps, replica: string): { stop(): void } {
  const { log, clock } = deps;
  const job = { pool: deps.pool, log, clock, replica };
  const jobs = [
    schedulePeriodic(job, "agents.metrics_retention", RETENTION_EVERY_MS, async (c) => {
      await pruneMetrics(c, { clock, log, retentionDays: deps.config.agents.metrics_retention_days });
    }),
    schedulePeriodic(job, "agents.link_grants_prune", GRANT_PRUNE_EVERY_MS, async (c) => {
      const n = await grantsDb.prune(c, clock.now());
      if (n) log.info({ deleted: n }, "expired link grants pruned");
    }),
    schedulePeriodic(job, "agents.upgrade_deadlines", DEADLINE_EVERY_MS, async () => {
      await expireUpgrades(deps);
    }),
  ];
  return {
    stop() {
      for (const j of jobs) j.stop();
    },
  };
}

import { withJobLock } from "@orch/kit";
import { commandRunsDb } from "../db/commands.js";
import { finishCommandRun } from "../commands/finish.js";
import { modulesDb } from "../db/catalog.js";
import { operationsDb } from "../db/operations.js";
import { runsDb } from "../db/runs.js";
import type { StateDeps } from "../deps.js";
import { finishOperation } from "./finish.js";
import { HEARTBEAT_STALE_MS } from "./heartbeat.js";
import type { ProgressPublisher } from "./progress.js";

const DAY_MS = 86_400_000;

/** The periodic job's name, also the lock the sweep at start takes. */
export const SWEEP_JOB = "state.sweep";

/** The sweep at start: one replica at a time (job lock); a replica that finds it taken skips it. */
export async function sweep(
  deps: StateDeps,
  progress?: ProgressPublisher,
): Promise<{ timedOut: number; interrupted: number }> {
  let result = { timedOut: 0, interrupted: 0 };
  await withJobLock(deps.pool, SWEEP_JOB, async () => {
    result = await sweepStale(deps, progress);
  });
  return result;
}

/**
 * Ends what nobody will end any more: operations past their deadline (e.g. their replica died)
 * become timed_out with their event, fan-outs and command runs without a heartbeat become interrupted, and module
 * versions nothing refers to are dropped. The caller holds the `state.sweep` job lock.
 */
export async function sweepStale(
  deps: StateDeps,
  progress?: ProgressPublisher,
): Promise<{ timedOut: number; interrupted: number }> {
  const { pool, clock } = deps;
  let timedOut = 0;
  const now = clock.now();
  const interruptedRuns = await runsDb.interruptStale(pool, now - HEARTBEAT_STALE_MS, now);
  for (const id of interruptedRuns) progress?.changed(id);
  let interrupted = interruptedRuns.length;
  // Command runs the same way: a dead driver's running targets are lost, its queued ones never start.
  for (const run of await commandRunsDb.staleIds(pool, now - HEARTBEAT_STALE_MS)) {
    if (await finishCommandRun(deps, run, "interrupted")) interrupted++;
  }
  for (;;) {
    const stale = await operationsDb.stale(pool, clock.now(), clock.now() - HEARTBEAT_STALE_MS, 200);
    for (const op of stale) {
      const ended = await finishOperation(deps, op, {
        status: "timed_out",
        finished_at: clock.now(),
        error_code: "operation_timed_out",
        error: "the operation did not finish before its deadline",
      });
      if (ended) timedOut++;
      if (ended && op.run_id) progress?.changed(op.run_id);
    }
    if (stale.length < 200) break;
  }
  await modulesDb.pruneVersions(pool, now - DAY_MS);
  if (timedOut || interrupted) deps.log.info({ timed_out: timedOut, interrupted }, "swept stale state operations");
  return { timedOut, interrupted };
}

import { withJobLock } from "@orch/kit";
import { modulesDb } from "../db/catalog.js";
import { operationsDb } from "../db/operations.js";
import { runsDb } from "../db/runs.js";
import type { StateDeps } from "./deps.js";
import { HEARTBEAT_STALE_MS } from "./fanout.js";
import { finishOperation } from "./finish.js";

const DAY_MS = 86_400_000;

/**
 * Ends what nobody will end any more: operations past their deadline (e.g. their replica died)
 * become timed_out with their event, fan-outs without a heartbeat become interrupted, and module
 * versions nothing refers to are dropped. One replica at a time (job lock).
 */
export async function sweep(deps: StateDeps): Promise<{ timedOut: number; interrupted: number }> {
  const { pool, clock } = deps;
  let timedOut = 0;
  let interrupted = 0;
  await withJobLock(pool, "state.sweep", async () => {
    const now = clock.now();
    interrupted = (await runsDb.interruptStale(pool, now - HEARTBEAT_STALE_MS, now)).length;
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
      }
      if (stale.length < 200) break;
    }
    await modulesDb.pruneVersions(pool, now - DAY_MS);
  });
  if (timedOut || interrupted) deps.log.info({ timed_out: timedOut, interrupted }, "swept stale state operations");
  return { timedOut, interrupted };
}

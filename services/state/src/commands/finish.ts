import type { CommandRunStatus } from "@orch/contracts";
import type { StateDeps } from "../deps.js";
import { commandRunMsg, countsOf, targetMsg } from "./convert.js";
import { commandRunsDb, type CommandRunRow, type CommandTargetRow } from "../db/commands.js";
import { runEvents } from "./events.js";

/**
 * Ends a live run with its `run.finished` event in one transaction, then publishes the final
 * CommandRunEvent{run}. `interrupted` is the sweeper's (the run's driver is gone); otherwise a
 * cancelling run ends cancelled whatever the driver says. Returns undefined when it had ended already.
 */
export async function finishCommandRun(
  deps: StateDeps,
  id: string,
  status: CommandRunStatus,
): Promise<CommandRunRow | undefined> {
  const { events, clock } = deps;
  const ended = await events.tx(async (db, emit) => {
    const now = clock.now();
    let skipped: CommandTargetRow[] = [];
    let run: CommandRunRow | undefined;
    if (status === "interrupted") {
      run = await commandRunsDb.interrupt(db, id, now);
      if (run) await commandRunsDb.abandonTargets(db, id, now);
    } else {
      skipped = await commandRunsDb.notStarted(db, id);
      run = await commandRunsDb.end(db, id, status, now);
    }
    if (!run) return undefined;
    const counts = countsOf((await commandRunsDb.counts(db, [id])).get(id));
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    await emit({
      type: "run.finished",
      summary: `command run ${id} ended ${run.status} (${counts.succeeded} of ${total} succeeded)`,
      actor: { id: run.actor_id, name: run.actor_name, type: "operator" },
      target: { id, name: id, type: "run" },
      metadata: { run_id: id, status: run.status, counts, total, duration_ms: now - run.created_at },
    });
    return { run, counts, skipped };
  });
  if (!ended) return undefined;
  const publish = runEvents(deps.nc, id);
  for (const t of ended.skipped) publish.target(targetMsg(t, false));
  publish.run(commandRunMsg(ended.run, ended.counts));
  return ended.run;
}

import { commandRunFinal } from "@orch/contracts";
import { notFound, precondition, type Actor } from "@orch/kit";
import { commandRunsDb, type CommandTargetRow } from "../db/commands.js";
import type { StateDeps } from "../deps.js";

/**
 * Records a cancel with its run.cancelled event: the run becomes cancelling and its queued targets
 * not_started (`skipped`). A run already cancelling is cancelled again without a second event, so
 * its `running` targets are told again. 404 for a run gone, 412 run_finished for one that ended.
 */
export async function recordCancel(
  deps: StateDeps,
  id: string,
  asked: string,
  actor: Actor,
): Promise<{ skipped: CommandTargetRow[]; running: Array<{ node_id: string; job_id: string }> }> {
  return deps.events.tx(async (db, emit) => {
    const run = await commandRunsDb.get(db, id, true);
    if (!run) throw notFound("run_not_found", `no run '${asked}'`);
    if (commandRunFinal(run.status))
      throw precondition("run_finished", `run ${id} has already ended (${run.status})`, {
        run_status: run.status,
      });
    if (run.status === "cancelling") return { skipped: [], running: await commandRunsDb.running(db, id) };
    await commandRunsDb.cancelling(db, id, actor.name, deps.clock.now());
    const skipped = await commandRunsDb.notStarted(db, id);
    await emit({
      type: "run.cancelled",
      summary: `command run ${id} cancelled by ${actor.name}`,
      actor,
      target: { id, name: id, type: "run" },
      metadata: { run_id: id, not_started: skipped.length },
    });
    return { skipped, running: await commandRunsDb.running(db, id) };
  });
}

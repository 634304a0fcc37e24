import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CommandRunSchema } from "@orch/contracts";
import type { Actor, Queryable } from "@orch/kit";
import { commandRunsDb, type CommandRunRow } from "../db/commands.js";
import type { Engine } from "../engine/index.js";
import { commandRunMsg, countsOf } from "./convert.js";
import { finishCommandRun } from "./finish.js";
import { planCommandRun, runStartedEvent, type RunApproval } from "./plan.js";
import { maintenanceWindow, type Resolved } from "./targets.js";
import type { CommandSpec } from "./validate.js";

export type CommandRunMsg = MessageInitShape<typeof CommandRunSchema>;

/** A stored run as the API shows it: counts always, targets (and their output) when asked. */
export async function viewCommandRun(
  db: Queryable,
  run: CommandRunRow,
  withTargets: boolean,
  withOutput: boolean,
): Promise<CommandRunMsg> {
  const counts = countsOf((await commandRunsDb.counts(db, [run.id])).get(run.id));
  const targets = withTargets ? await commandRunsDb.targets(db, run.id, withOutput) : undefined;
  return commandRunMsg(run, counts, targets, withOutput);
}

/**
 * Records a run of already resolved targets with its run.started event and hands it to this
 * replica's driver: what a start does once it may run, whether asked directly, broken glass, or
 * executing an approved change request (`approval`, recorded on the run and in the event).
 */
export async function startResolvedRun(
  engine: Engine,
  p: { spec: CommandSpec; resolved: readonly Resolved[]; actor: Actor; approval?: RunApproval },
): Promise<CommandRunMsg> {
  const { deps, clients, commands } = engine;
  const { pool, events, clock, ids } = deps;
  const { spec, actor, approval } = p;
  const window = await maintenanceWindow(deps, clients);
  const planned = planCommandRun({
    id: ids.next(),
    nextId: () => ids.next(),
    spec,
    resolved: p.resolved,
    window,
    actor,
    now: clock.now(),
    changeRequestId: approval?.changeRequestId,
  });
  const { run, targets, live } = planned;
  await events.tx(async (db, emit) => {
    await commandRunsDb.insert(db, run, targets);
    await emit(runStartedEvent(planned, spec, actor, approval));
  });
  // Nothing to launch (no match, or only unknown / unapproved names): the run ends at once.
  if (!live) await finishCommandRun(deps, run.id, "completed");
  // The answer is the run as recorded, read before the driver can move it on.
  const answer = await viewCommandRun(pool, (await commandRunsDb.get(pool, run.id))!, true, false);
  if (live) await commands.start({ run, targets: targets.filter((t) => t.batch > 0), env: spec.env, actor });
  return answer;
}

import { COMMAND_RUN_STATUSES, type StateService } from "@orch/contracts";
import { invalid, keysetPage, notFound, pageCursor, pageLimit, type Actor, type Handlers } from "@orch/kit";
import { commandRunMsg, countsOf, targetMsg } from "../commands/convert.js";
import { commandRunsDb, type CommandRunRow } from "../db/commands.js";
import { CANCEL_TIMEOUT_MS, type CommandDriver } from "../commands/driver.js";
import { recordCancel } from "../commands/cancel.js";
import { runEvents } from "../commands/events.js";
import { finishCommandRun } from "../commands/finish.js";
import { planCommandRun, runStartedEvent } from "../commands/plan.js";
import { maintenanceWindow, resolveTargets } from "../commands/targets.js";
import { checkStart } from "../commands/validate.js";
import type { Engine } from "../engine/index.js";

type CommandHandlers = Pick<
  Handlers<typeof StateService>,
  "startCommandRun" | "listCommandRuns" | "getCommandRun" | "cancelCommandRun"
>;

const MAX_RUNS_PAGE = 200;
const STATUSES = new Set<string>(COMMAND_RUN_STATUSES);

/** An operator sees and cancels only its own runs (the gateway decides whether it may call at all); admins see all. */
const ownOnly = (actor: Actor): string => (actor.role === "operator" ? actor.id : "");
const visible = (run: CommandRunRow | undefined, actor: Actor): run is CommandRunRow =>
  run !== undefined && (actor.role !== "operator" || run.actor_id === actor.id);

export function commandHandlers(engine: Engine, driver: CommandDriver): CommandHandlers {
  const { deps, clients } = engine;
  const { pool, events, clock, ids, nc } = deps;

  async function view(run: CommandRunRow, withTargets: boolean, withOutput: boolean) {
    const counts = countsOf((await commandRunsDb.counts(pool, [run.id])).get(run.id));
    const targets = withTargets ? await commandRunsDb.targets(pool, run.id, withOutput) : undefined;
    return commandRunMsg(run, counts, targets, withOutput);
  }

  async function load(id: string, actor: Actor): Promise<CommandRunRow> {
    const run = await commandRunsDb.get(pool, id.toUpperCase());
    if (!visible(run, actor)) throw notFound("run_not_found", `no run '${id}'`);
    return run;
  }

  return {
    async startCommandRun(req, ctx) {
      const spec = checkStart(req);
      const resolved = await resolveTargets(clients, spec, ctx.actor);
      const window = await maintenanceWindow(deps, clients);
      const now = clock.now();
      const planned = planCommandRun({
        id: ids.next(),
        nextId: () => ids.next(),
        spec,
        resolved,
        window,
        actor: ctx.actor,
        now,
      });
      const { run, targets, live } = planned;
      await events.tx(async (db, emit) => {
        await commandRunsDb.insert(db, run, targets);
        await emit(runStartedEvent(planned, spec, ctx.actor));
      });
      // Nothing to launch (no match, or only unknown / unapproved names): the run ends at once.
      if (!live) await finishCommandRun(deps, run.id, "completed");
      // The answer is the run as recorded, read before the driver can move it on.
      const answer = await view((await commandRunsDb.get(pool, run.id))!, true, false);
      if (live)
        await driver.start({ run, targets: targets.filter((t) => t.batch > 0), env: spec.env, actor: ctx.actor });
      return answer;
    },

    async listCommandRuns(req, ctx) {
      const limit = pageLimit(req.limit, 50, MAX_RUNS_PAGE);
      const cursor = pageCursor(req.cursor, "ulid");
      if (req.status && !STATUSES.has(req.status))
        throw invalid("invalid_request", `status must be one of ${[...STATUSES].join(", ")}`, { field: "status" });
      const rows = await commandRunsDb.page(
        pool,
        { status: req.status, actor_id: ownOnly(ctx.actor) },
        limit + 1,
        cursor,
      );
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      const counts = await commandRunsDb.counts(
        pool,
        page.map((r) => r.id),
      );
      return { runs: page.map((r) => commandRunMsg(r, countsOf(counts.get(r.id)))), nextCursor };
    },

    async getCommandRun(req, ctx) {
      return view(await load(req.id, ctx.actor), true, !req.omitOutput);
    },

    async cancelCommandRun(req, ctx) {
      const id = (await load(req.id, ctx.actor)).id;
      const { skipped, running } = await recordCancel(deps, id, req.id, ctx.actor);
      const after = await view((await commandRunsDb.get(pool, id))!, true, false);
      // The driver stops launching (told here, or it polls on another replica); running agents are told directly.
      driver.cancelled(id);
      const publish = runEvents(nc, id);
      for (const t of skipped) publish.target(targetMsg(t, false));
      publish.run(after);
      await Promise.all(
        running.map((t) =>
          clients
            .agentCommand(t.node_id)
            .cancelCommand({ jobId: t.job_id }, { actor: ctx.actor, timeoutMs: CANCEL_TIMEOUT_MS })
            .catch(() => {}),
        ),
      );
      return after;
    },
  };
}

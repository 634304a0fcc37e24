import { COMMAND_RUN_STATUSES, type StateService } from "@orch/contracts";
import { invalid, keysetPage, notFound, pageCursor, pageLimit, type Actor, type Handlers } from "@orch/kit";
import { gateCommandRun } from "../approvals/command-run.js";
import { commandRunMsg, countsOf, targetMsg } from "../commands/convert.js";
import { commandRunsDb, type CommandRunRow } from "../db/commands.js";
import { CANCEL_TIMEOUT_MS, type CommandDriver } from "../commands/driver.js";
import { recordCancel } from "../commands/cancel.js";
import { runEvents } from "../commands/events.js";
import { startResolvedRun, viewCommandRun } from "../commands/start.js";
import { resolveTargets } from "../commands/targets.js";
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
  const { pool, nc } = deps;

  const view = (run: CommandRunRow, withTargets: boolean, withOutput: boolean) =>
    viewCommandRun(pool, run, withTargets, withOutput);

  async function load(id: string, actor: Actor): Promise<CommandRunRow> {
    const run = await commandRunsDb.get(pool, id.toUpperCase());
    if (!visible(run, actor)) throw notFound("run_not_found", `no run '${id}'`);
    return run;
  }

  return {
    async startCommandRun(req, ctx) {
      const spec = checkStart(req);
      const resolved = await resolveTargets(clients, spec, ctx.actor);
      const { reason, breakGlass } = req;
      const gate = await gateCommandRun(engine, { spec, resolved, actor: ctx.actor, reason, breakGlass });
      if (gate.kind === "held") return gate.answer;
      return startResolvedRun(engine, { spec, resolved, actor: ctx.actor });
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

import { createHash } from "node:crypto";
import { COMMAND_RUN_STATUSES, commandRunFinal, type StateService } from "@orch/contracts";
import {
  invalid,
  keysetPage,
  notFound,
  pageCursor,
  pageLimit,
  precondition,
  type Actor,
  type Handlers,
} from "@orch/kit";
import { commandRunMsg, countsOf, targetMsg } from "../commands/convert.js";
import { commandRunsDb, type CommandRunRow, type CommandTargetRow } from "../db/commands.js";
import { CANCEL_TIMEOUT_MS, type CommandDriver } from "../commands/driver.js";
import { runEvents } from "../commands/events.js";
import { finishCommandRun } from "../commands/finish.js";
import { maintenanceWindow, resolveTargets } from "../commands/targets.js";
import { checkStart } from "../commands/validate.js";
import { batchSize } from "../engine/fanout.js";
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
      const launchable = resolved.filter((r) => r.kind === "agent");
      const size = batchSize(spec.batch, launchable.length);
      const now = clock.now();
      const id = ids.next();
      const targets: CommandTargetRow[] = [];
      const base = {
        run_id: id,
        exit_code: null,
        signal: "",
        started_at: null,
        finished_at: null,
        duration_ms: null,
        stdout: Buffer.alloc(0),
        stderr: Buffer.alloc(0),
        stdout_truncated: false,
        stderr_truncated: false,
        error: "",
      };
      for (const [i, r] of launchable.entries())
        if (r.kind === "agent")
          targets.push({
            ...base,
            seq: i + 1,
            node_id: r.agent.nodeId,
            name: r.agent.name,
            batch: Math.floor(i / size) + 1,
            status: "queued",
            job_id: ids.next(),
          });
      for (const r of resolved)
        if (r.kind === "skip")
          targets.push({
            ...base,
            seq: targets.length + 1,
            node_id: r.nodeId,
            name: r.name,
            batch: 0,
            status: r.status,
            job_id: null,
          });
      const live = launchable.length > 0;
      const run: CommandRunRow = {
        id,
        status: "running",
        selector: spec.selector,
        node_ids: spec.nodeIds,
        argv: spec.argv,
        script: spec.script,
        env_keys: Object.keys(spec.env).sort(),
        timeout_s: spec.timeoutS,
        batch: spec.batch,
        batch_size: live ? size : 0,
        batches: live ? Math.ceil(launchable.length / size) : 0,
        max_failures: spec.maxFailures,
        maintenance_window: window,
        actor_id: ctx.actor.id,
        actor_name: ctx.actor.name,
        cancelled_by: null,
        created_at: now,
        updated_at: now,
        finished_at: null,
      };
      // What ran is named by digest for a script: the event log is no place for a script body.
      const what = spec.argv
        ? { command: spec.argv }
        : {
            script_sha256: createHash("sha256")
              .update(spec.script ?? "")
              .digest("hex"),
            script_bytes: Buffer.byteLength(spec.script ?? "", "utf8"),
          };
      await events.tx(async (db, emit) => {
        await commandRunsDb.insert(db, run, targets);
        await emit({
          type: "run.started",
          summary: `command run ${id} started on ${targets.length} agent${targets.length === 1 ? "" : "s"} by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: { id, name: id, type: "run" },
          metadata: {
            run_id: id,
            ...what,
            ...(spec.selector !== null ? { selector: spec.selector } : { node_ids: spec.nodeIds }),
            targets: targets.length,
            env_keys: run.env_keys,
            timeout_s: run.timeout_s,
            batch: run.batch,
            max_failures: run.max_failures,
            maintenance_window: window,
          },
        });
      });
      // Nothing to launch (no match, or only unknown / unapproved names): the run ends at once.
      if (!live) await finishCommandRun(deps, id, "completed");
      // The answer is the run as recorded, read before the driver can move it on.
      const answer = await view((await commandRunsDb.get(pool, id))!, true, false);
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
      const { skipped, running } = await events.tx(async (db, emit) => {
        const run = await commandRunsDb.get(db, id, true);
        if (!run) throw notFound("run_not_found", `no run '${req.id}'`);
        if (commandRunFinal(run.status))
          throw precondition("run_finished", `run ${id} has already ended (${run.status})`, {
            run_status: run.status,
          });
        if (run.status === "cancelling") return { skipped: [], running: await commandRunsDb.running(db, id) };
        await commandRunsDb.cancelling(db, id, ctx.actor.name, clock.now());
        const skipped = await commandRunsDb.notStarted(db, id);
        await emit({
          type: "run.cancelled",
          summary: `command run ${id} cancelled by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: { id, name: id, type: "run" },
          metadata: { run_id: id, not_started: skipped.length },
        });
        return { skipped, running: await commandRunsDb.running(db, id) };
      });
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

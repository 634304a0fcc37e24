import type { StateService } from "@orch/contracts";
import { keysetPage, notFound, pageCursor, type Handlers, type Pool } from "@orch/kit";
import { runMsg } from "../convert.js";
import { assignmentsDb } from "../db/catalog.js";
import { operationsDb } from "../db/operations.js";
import { runsDb } from "../db/runs.js";
import { approvedAgents, matchAgents } from "../engine/fanout.js";
import { withParameters } from "../engine/assignment-parameters.js";
import type { Engine } from "../engine/index.js";
import { loadSources } from "../engine/modules.js";
import { checkMaxFailures, kindOf, runsPageLimit, waitMs } from "../validate.js";
import { reachableNodeIds } from "./agents.js";
import { gateApply } from "../approvals/gate.js";

type H = Handlers<typeof StateService>;

/** `reach`: only these targets (a scoped operator's reachable agents). */
async function runView(pool: Pool, id: string, reach?: readonly string[]) {
  const run = await runsDb.get(pool, id);
  if (!run) throw notFound("run_not_found", `no run '${id}'`);
  const keep = reach && new Set(reach);
  const shown = keep ? { ...run, targets: run.targets.filter((t) => keep.has(t.node_id)) } : run;
  return runMsg(shown, await operationsDb.ofRun(pool, id));
}

export const runAssignment =
  (engine: Engine): H["runAssignment"] =>
  async (req, ctx) => {
    const { deps, clients, fanout, cache } = engine;
    const kind = kindOf(req.kind);
    const wait = waitMs(req.waitSeconds);
    checkMaxFailures(req.maxFailures);
    const assignment = await assignmentsDb.get(deps.pool, req.name);
    if (!assignment) throw notFound("assignment_not_found", `no assignment '${req.name}'`);
    const sources = withParameters(await loadSources(deps.pool, cache, assignment.modules), assignment.parameters);
    const agents = matchAgents(assignment.selector, await approvedAgents(clients, ctx.actor));
    const rollout = { batch: req.batch.trim(), maxFailures: req.maxFailures ?? null };
    if (kind === "apply") {
      const gate = await gateApply(engine, {
        assignment,
        sources,
        agents,
        ...rollout,
        actor: ctx.actor,
        reason: req.reason,
        breakGlass: req.breakGlass,
      });
      if (gate.kind === "held") {
        await fanout.waitFor(gate.planRunId, wait);
        return { ...(await runView(deps.pool, gate.planRunId)), changeRequestId: gate.changeRequestId };
      }
    }
    const { run } = await fanout.start({ assignment, kind, ...rollout, actor: ctx.actor, sources, agents });
    await fanout.waitFor(run.id, wait);
    return runView(deps.pool, run.id);
  };

export const getAssignmentRun =
  ({ deps, clients }: Engine): H["getAssignmentRun"] =>
  async (req, ctx) => {
    // Another operator's run may have reached agents outside this operator's scope: hide those targets.
    const view = await runView(deps.pool, req.runId, await reachableNodeIds(clients, ctx.actor));
    if (view.assignment !== req.name)
      throw notFound("run_not_found", `no run '${req.runId}' of assignment '${req.name}'`);
    return view;
  };

export const listAssignmentRuns =
  ({ deps }: Engine): H["listAssignmentRuns"] =>
  async (req) => {
    const limit = runsPageLimit(req.limit);
    const cursor = pageCursor(req.cursor, "ulid");
    // No assignment lookup: a deleted assignment's runs stay listable (an unknown name is an empty page).
    const rows = await runsDb.page(deps.pool, req.name, limit + 1, cursor);
    const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
    // Targets are left out: the list is a summary, GetAssignmentRun has them (scoped to the operator).
    return { runs: page.map((r) => runMsg({ ...r, targets: [] }, [])), nextCursor };
  };

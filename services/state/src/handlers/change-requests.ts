import type { JsonObject } from "@bufbuild/protobuf";
import type { StateService } from "@orch/contracts";
import { invalid, OrchError, type Handlers } from "@orch/kit";
import { executeAgentApply, replanAgentApply } from "../approvals/agent-apply.js";
import { executeCommandRun, replanCommandRun } from "../approvals/command-run.js";
import { executeCatalogWrite } from "../approvals/catalog-write.js";
import { frozenApply } from "../approvals/apply-content.js";
import { cannotReplan, planChanged } from "../approvals/refusals.js";
import { assignmentsDb } from "../db/catalog.js";
import { runsDb } from "../db/runs.js";
import { withParameters } from "../engine/assignment-parameters.js";
import { approvedAgents, matchAgents } from "../engine/fanout.js";
import type { Engine } from "../engine/index.js";
import { loadSources } from "../engine/modules.js";
import { valuesFor } from "../values/load.js";

type H = Handlers<typeof StateService>;

/** The rollout an apply was approved with (the hash check proves it is the frozen one). */
function frozenRollout(req: { content?: Record<string, unknown> | undefined }) {
  const c = req.content ?? {};
  return {
    batch: typeof c.batch === "string" ? c.batch : "",
    maxFailures: typeof c.max_failures === "number" ? c.max_failures : null,
  };
}

/** The apply as it would run now; its assignment or a module gone is `gone(why)`. */
async function currentApply(
  engine: Engine,
  name: string,
  actor: Parameters<typeof approvedAgents>[1],
  gone: (why: string) => OrchError = planChanged,
) {
  const { deps, clients, cache } = engine;
  const assignment = await assignmentsDb.get(deps.pool, name);
  if (!assignment) throw gone(`assignment '${name}' was deleted`);
  const sources = await loadSources(deps.pool, cache, assignment.modules).then(
    (s) => withParameters(s, assignment.parameters),
    (err: unknown) => {
      throw err instanceof OrchError && err.reason === "module_not_found" ? gone(err.message) : err;
    },
  );
  const agents = matchAgents(assignment.selector, await approvedAgents(clients, actor));
  return { assignment, sources, agents };
}

/**
 * Carries out an approved change request, once: the auth service calls it (as the requester) when
 * the last approval is given. The apply's inputs are frozen again and compared with the approved
 * hash, so modules, values, parameters or targets that changed since refuse with plan_changed. A
 * retried call (the caller's commit lost after the run started) answers the run it began.
 */
export const executeChangeRequest =
  (engine: Engine): H["executeChangeRequest"] =>
  async (req, ctx) => {
    if (req.action === "agent.apply") return { result: (await executeAgentApply(engine, req, ctx.actor)).id };
    if (req.action === "command.run") return { result: await executeCommandRun(engine, req, ctx.actor) };
    if (req.action === "catalog.write") return { result: await executeCatalogWrite(engine, req, ctx.actor) };
    if (req.action !== "assignment.apply")
      throw invalid("invalid_request", `the state service does not execute '${req.action}'`, { field: "action" });
    const done = await runsDb.byChangeRequest(engine.deps.pool, req.id);
    if (done) return { result: done.id };
    const { assignment, sources, agents } = await currentApply(engine, req.targetName, ctx.actor);
    const rollout = frozenRollout(req);
    const frozen = frozenApply(assignment, sources, await valuesFor(engine.deps.pool, sources, agents), rollout);
    if (frozen.hash !== req.contentHash) throw planChanged("its modules, values, parameters or targets differ");
    try {
      const { run } = await engine.fanout.start({
        assignment,
        kind: "apply",
        batch: rollout.batch,
        maxFailures: rollout.maxFailures,
        actor: ctx.actor,
        sources,
        agents,
        approval: { changeRequestId: req.id, approvers: req.approvers },
      });
      return { result: run.id };
    } catch (err) {
      // Two replicas executing the same request: the unique index lets one run; the other answers it.
      const again = await runsDb.byChangeRequest(engine.deps.pool, req.id);
      if (again) return { result: again.id };
      throw err;
    }
  };

/**
 * Freezes a pending change request's action again as it would run now (as the requester) and
 * starts a fresh plan of it: the auth service stores the new content and hash, and the request
 * needs approval again. Errors (the assignment, agent or a module gone) say why it cannot be.
 */
export const replanChangeRequest =
  (engine: Engine): H["replanChangeRequest"] =>
  async (req, ctx) => {
    if (req.action === "agent.apply") return replanAgentApply(engine, req, ctx.actor);
    if (req.action === "command.run") return replanCommandRun(engine, req, ctx.actor);
    if (req.action !== "assignment.apply")
      throw invalid("invalid_request", `the state service does not plan '${req.action}'`, { field: "action" });
    const { assignment, sources, agents } = await currentApply(engine, req.targetName, ctx.actor, cannotReplan);
    const rollout = frozenRollout(req);
    const frozen = frozenApply(assignment, sources, await valuesFor(engine.deps.pool, sources, agents), rollout);
    const { run } = await engine.fanout.start({
      assignment,
      kind: "plan",
      batch: "",
      maxFailures: null,
      actor: ctx.actor,
      sources,
      agents,
    });
    const n = agents.length;
    return {
      content: { ...frozen.content, plan_run_id: run.id } as unknown as JsonObject,
      contentHash: frozen.hash,
      summary: `apply assignment ${assignment.name} on ${n} agent${n === 1 ? "" : "s"}`,
    };
  };

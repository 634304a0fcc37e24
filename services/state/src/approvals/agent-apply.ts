import type { JsonObject } from "@bufbuild/protobuf";
import { OrchError, type Actor } from "@orch/kit";
import { operationsDb, type OperationRow } from "../db/operations.js";
import type { AgentInfo } from "../deps.js";
import type { Engine } from "../engine/index.js";
import { loadSources } from "../engine/modules.js";
import type { ModuleSource } from "../engine/render.js";
import { approvedAgent } from "../handlers/agents.js";
import { valuesFor } from "../values/load.js";
import { frozenAgentApply } from "./apply-content.js";
import { agentRef, needsApproval } from "./gate.js";
import { cannotReplan, planChanged } from "./refusals.js";

const ACTION = "agent.apply";

/** What an agent apply may do: run now, or wait for the change request it became (its plan is `planOperationId`). */
export type AgentApplyGate = { kind: "run" } | { kind: "held"; changeRequestId: string; planOperationId: string };

export interface AgentApplyRequest {
  /** With its merged values (values/load.ts), as the apply would render them. */
  agent: AgentInfo;
  sources: ModuleSource[];
  actor: Actor;
  reason: string;
  breakGlass: boolean;
}

const modulesText = (sources: readonly ModuleSource[]) => sources.map((s) => s.name).join(", ");

/**
 * An apply to one agent that an approval policy covers does not run: it becomes a change request
 * frozen on the agent, the module versions and its values, with a plan operation approvers read
 * the diff from. An admin may break glass with a reason instead.
 */
export async function gateAgentApply(engine: Engine, req: AgentApplyRequest): Promise<AgentApplyGate> {
  const { agent, sources, actor } = req;
  const label = agent.name || agent.nodeId;
  const verdict = await needsApproval(engine, {
    action: ACTION,
    agents: [agent],
    actor,
    reason: req.reason,
    breakGlass: req.breakGlass,
    target: { id: agent.nodeId, name: agent.name, type: "agent" },
    doing: `applied ${modulesText(sources)} to agent ${label}`,
  });
  if (verdict.kind === "run") return verdict;
  const frozen = frozenAgentApply(agent, sources);
  const { op } = await engine.runner.start({ agent, kind: "plan", sources, actor });
  const cr = await engine.clients.approvals.submitChangeRequest(
    {
      action: ACTION,
      targetType: "agent",
      targetName: agent.nodeId,
      summary: `apply ${modulesText(sources)} on agent ${label}`,
      reason: verdict.reason,
      content: { ...frozen.content, plan_operation_id: op.id } as unknown as JsonObject,
      contentHash: frozen.hash,
      agents: [agentRef(agent)],
    },
    { actor },
  );
  return { kind: "held", changeRequestId: cr.id, planOperationId: op.id };
}

/** The frozen content's agent and module names, as the approved request carries them. */
function approvedTargets(content: Record<string, unknown> | undefined): { nodeId: string; modules: string[] } {
  const c = content ?? {};
  const modules = Array.isArray(c.modules)
    ? c.modules.map((m) => (m && typeof m === "object" ? String((m as { name?: unknown }).name ?? "") : ""))
    : [];
  return { nodeId: typeof c.node_id === "string" ? c.node_id : "", modules };
}

/**
 * The agent apply a request's content names, as it would run now: the agent (with its values) and
 * the modules' current versions. An agent or module gone is `gone(why)`.
 */
async function currentAgentApply(
  engine: Engine,
  content: Record<string, unknown> | undefined,
  actor: Actor,
  gone: (why: string) => OrchError,
): Promise<{ agent: AgentInfo; sources: ModuleSource[] }> {
  const { nodeId, modules } = approvedTargets(content);
  const agent = await approvedAgent(engine.clients, nodeId, actor).catch((err: unknown) => {
    const e = OrchError.from(err);
    throw e.reason === "agent_not_found" || e.reason === "agent_not_approved" ? gone(e.message) : e;
  });
  const sources = await loadSources(engine.deps.pool, engine.cache, modules).catch((err: unknown) => {
    throw err instanceof OrchError && err.reason === "module_not_found" ? gone(err.message) : err;
  });
  const [withValues] = await valuesFor(engine.deps.pool, sources, [agent]);
  return { agent: withValues!, sources };
}

/**
 * Carries out an approved agent apply, once, as the requester as they are now: the agent, module
 * versions and values are frozen again and must hash as approved (plan_changed otherwise: an agent
 * gone or no longer approved, a module deleted or changed, values changed). A retried call answers
 * the operation it began.
 */
export async function executeAgentApply(
  engine: Engine,
  req: { id: string; contentHash: string; content?: Record<string, unknown> | undefined },
  actor: Actor,
): Promise<OperationRow> {
  const { pool } = engine.deps;
  const done = await operationsDb.byChangeRequest(pool, req.id);
  if (done) return done;
  const { agent: withValues, sources } = await currentAgentApply(engine, req.content, actor, planChanged);
  if (frozenAgentApply(withValues, sources).hash !== req.contentHash)
    throw planChanged("its modules or the agent's values differ");
  try {
    const { op } = await engine.runner.start({
      agent: withValues,
      kind: "apply",
      sources,
      actor,
      changeRequestId: req.id,
    });
    return op;
  } catch (err) {
    // Two replicas executing the same request: the unique index lets one start; the other answers it.
    const again = await operationsDb.byChangeRequest(pool, req.id);
    if (again) return again;
    throw err;
  }
}

/** A pending agent apply frozen again as it would run now, with a fresh plan operation. */
export async function replanAgentApply(
  engine: Engine,
  req: { content?: Record<string, unknown> | undefined },
  actor: Actor,
): Promise<{ content: JsonObject; contentHash: string; summary: string }> {
  const { agent, sources } = await currentAgentApply(engine, req.content, actor, cannotReplan);
  const frozen = frozenAgentApply(agent, sources);
  const { op } = await engine.runner.start({ agent, kind: "plan", sources, actor });
  return {
    content: { ...frozen.content, plan_operation_id: op.id } as unknown as JsonObject,
    contentHash: frozen.hash,
    summary: `apply ${modulesText(sources)} on agent ${agent.name || agent.nodeId}`,
  };
}

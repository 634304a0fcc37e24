import type { JsonObject } from "@bufbuild/protobuf";
import type { ApprovalAction } from "@orch/contracts";
import { askApproval, type Actor, type ApprovalVerdict } from "@orch/kit";
import type { AssignmentRow } from "../db/catalog.js";
import type { AgentInfo } from "../deps.js";
import type { Engine } from "../engine/index.js";
import type { ModuleSource } from "../engine/render.js";
import { valuesFor } from "../values/load.js";
import { frozenApply } from "./apply-content.js";

const ACTION = "assignment.apply";

export interface ApplyRequest {
  assignment: AssignmentRow;
  sources: ModuleSource[];
  agents: AgentInfo[];
  batch: string;
  maxFailures: number | null;
  actor: Actor;
  reason: string;
  breakGlass: boolean;
}

/** What the apply may do: run now, or wait for the change request it became (its plan is `planRunId`). */
export type ApplyGate = { kind: "run" } | { kind: "held"; changeRequestId: string; planRunId: string };

export const agentRef = (a: AgentInfo) => ({ id: a.nodeId, name: a.name, attributes: a.attributes, tags: a.tags });

/** The actor, what they act on, and how: what every gate needs to ask the policies. */
export interface GateInput {
  action: ApprovalAction;
  agents: AgentInfo[];
  actor: Actor;
  reason: string;
  breakGlass: boolean;
  /** What the action targets, for the bypass event. */
  target: { id: string; name: string; type: string };
  /** "applied assignment web", for the bypass event's summary. */
  doing: string;
}

/**
 * Approval at the point of execution (askApproval of @orch/kit, shared with the terminal and secrets
 * services): `run`, or `hold` with the checked reason.
 */
export function needsApproval(engine: Engine, g: GateInput): Promise<ApprovalVerdict> {
  return askApproval(
    { approvals: engine.clients.approvals, events: engine.deps.events },
    { ...g, agents: g.agents.map(agentRef) },
  );
}

/**
 * An apply whose targets an approval policy covers does not run. It becomes a change request that
 * freezes what it would do (the inputs' hash) and starts a plan of it, so approvers see the
 * per-agent diffs. An admin may break glass with a reason instead.
 */
export async function gateApply(engine: Engine, req: ApplyRequest): Promise<ApplyGate> {
  const name = req.assignment.name;
  const verdict = await needsApproval(engine, {
    action: ACTION,
    agents: req.agents,
    actor: req.actor,
    reason: req.reason,
    breakGlass: req.breakGlass,
    target: { id: name, name, type: "assignment" },
    doing: `applied assignment ${name}`,
  });
  return verdict.kind === "run" ? verdict : hold(engine, req, verdict.reason);
}

async function hold(engine: Engine, req: ApplyRequest, reason: string): Promise<ApplyGate> {
  const { deps, fanout, clients } = engine;
  const withValues = await valuesFor(deps.pool, req.sources, req.agents);
  const frozen = frozenApply(req.assignment, req.sources, withValues, req);
  const { run } = await fanout.start({
    assignment: req.assignment,
    kind: "plan",
    batch: "",
    maxFailures: null,
    actor: req.actor,
    sources: req.sources,
    agents: req.agents,
  });
  const n = req.agents.length;
  const cr = await clients.approvals.submitChangeRequest(
    {
      action: ACTION,
      targetType: "assignment",
      targetName: req.assignment.name,
      summary: `apply assignment ${req.assignment.name} on ${n} agent${n === 1 ? "" : "s"}`,
      reason,
      content: { ...frozen.content, plan_run_id: run.id } as unknown as JsonObject,
      contentHash: frozen.hash,
      agents: req.agents.map(agentRef),
    },
    { actor: req.actor },
  );
  return { kind: "held", changeRequestId: cr.id, planRunId: run.id };
}

import type { JsonObject } from "@bufbuild/protobuf";
import type { ApprovalAction } from "@orch/contracts";
import { forbidden, invalid, type Actor } from "@orch/kit";
import type { AssignmentRow } from "../db/catalog.js";
import type { AgentInfo } from "../deps.js";
import type { Engine } from "../engine/index.js";
import type { ModuleSource } from "../engine/render.js";
import { valuesFor } from "../values/load.js";
import { frozenApply } from "./apply-content.js";

const MAX_REASON = 500;
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

function checkReason(reason: string): string {
  const r = reason.trim();
  if (r.length > MAX_REASON)
    throw invalid("invalid_request", `reason is longer than ${MAX_REASON} characters`, { field: "reason" });
  return r;
}

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
 * Approval at the point of execution: asks the policies whether the action on these agents needs
 * approval. `run`: it does not (or an admin broke glass, recorded here); `hold`: it must become a
 * change request, with the checked reason.
 */
export async function needsApproval(
  engine: Engine,
  g: GateInput,
): Promise<{ kind: "run" } | { kind: "hold"; reason: string }> {
  const reason = checkReason(g.reason);
  const verdict = await engine.clients.approvals.evaluateApproval(
    { action: g.action, agents: g.agents.map(agentRef) },
    { actor: g.actor },
  );
  if (!verdict.required) return { kind: "run" };
  if (!g.breakGlass) return { kind: "hold", reason };
  await bypass(engine, g, reason, verdict);
  return { kind: "run" };
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

async function bypass(
  engine: Engine,
  g: GateInput,
  reason: string,
  verdict: { policy: string; approverIds: string[] },
): Promise<void> {
  if (g.actor.role !== "admin")
    throw forbidden("break_glass_forbidden", "only an admin may act without the approval a policy asks for");
  if (!reason) throw invalid("break_glass_reason_required", "a break-glass apply needs a reason", { field: "reason" });
  await engine.deps.events.tx(async (_db, emit) => {
    await emit({
      type: "approval.bypassed",
      summary: `${g.actor.name} ${g.doing} without approval (policy ${verdict.policy}): ${reason}`,
      actor: g.actor,
      target: g.target,
      metadata: {
        action: g.action,
        policy: verdict.policy,
        reason,
        agents: g.agents.length,
        notify_operator_ids: verdict.approverIds,
      },
    });
  });
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

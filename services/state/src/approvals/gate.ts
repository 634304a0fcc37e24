import type { JsonObject } from "@bufbuild/protobuf";
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

const agentRef = (a: AgentInfo) => ({ id: a.nodeId, name: a.name, attributes: a.attributes, tags: a.tags });

function checkReason(reason: string): string {
  const r = reason.trim();
  if (r.length > MAX_REASON)
    throw invalid("invalid_request", `reason is longer than ${MAX_REASON} characters`, { field: "reason" });
  return r;
}

/**
 * Approval at the point of execution: an apply whose targets an approval policy covers does not
 * run. It becomes a change request that freezes what it would do (the inputs' hash) and starts a
 * plan of it, so approvers see the per-agent diffs. An admin may break glass with a reason instead.
 */
export async function gateApply(engine: Engine, req: ApplyRequest): Promise<ApplyGate> {
  const reason = checkReason(req.reason);
  const agents = req.agents.map(agentRef);
  const verdict = await engine.clients.approvals.evaluateApproval({ action: ACTION, agents }, { actor: req.actor });
  if (!verdict.required) return { kind: "run" };
  if (req.breakGlass) {
    await bypass(engine, req, reason, verdict);
    return { kind: "run" };
  }
  return hold(engine, req, reason);
}

async function bypass(
  engine: Engine,
  req: ApplyRequest,
  reason: string,
  verdict: { policy: string; approverIds: string[] },
): Promise<void> {
  if (req.actor.role !== "admin")
    throw forbidden("break_glass_forbidden", "only an admin may apply without the approval a policy asks for");
  if (!reason) throw invalid("break_glass_reason_required", "a break-glass apply needs a reason", { field: "reason" });
  const name = req.assignment.name;
  await engine.deps.events.tx(async (_db, emit) => {
    await emit({
      type: "approval.bypassed",
      summary: `${req.actor.name} applied assignment ${name} without approval (policy ${verdict.policy}): ${reason}`,
      actor: req.actor,
      target: { id: name, name, type: "assignment" },
      metadata: {
        action: ACTION,
        policy: verdict.policy,
        reason,
        agents: req.agents.length,
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

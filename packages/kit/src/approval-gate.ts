// Four-eyes approval at the point of execution (docs/approvals.md), one rule for every service that
// holds actions (state, terminal, secrets): ask the policies; an action no policy covers runs; a
// covered one is held, unless an admin breaks glass with a reason, which is recorded as critical
// and addressed to the approvers. What a held action freezes is each service's own business.
import { APPROVAL_REASON_MAX, type ApprovalAction, type ApprovalAgentRef, type ApprovalService } from "@orch/contracts";
import { forbidden, invalid } from "./errors.js";
import type { Events, Ref } from "./outbox.js";
import type { Actor, Client } from "./rpc.js";

export interface ApprovalAsk {
  action: ApprovalAction;
  /** The agents the action touches, as a selector sees them ([] for agentless actions). */
  agents: readonly Pick<ApprovalAgentRef, "id" | "name" | "attributes" | "tags">[];
  actor: Actor;
  reason: string;
  breakGlass: boolean;
  /** What the action targets, for the bypass event. */
  target: Ref;
  /** "applied assignment web", "opened a terminal on web-1": the bypass event's summary. */
  doing: string;
  /** More for the bypass event's metadata (the secret write's op, say). */
  metadata?: Record<string, unknown>;
}

export interface ApprovalGateDeps {
  approvals: Pick<Client<typeof ApprovalService>, "evaluateApproval">;
  events: Pick<Events, "tx">;
}

/** `run`: no policy holds the action, or an admin broke glass (recorded); `hold`: it becomes a change request. */
export type ApprovalVerdict = { kind: "run" } | { kind: "hold"; reason: string };

function checkReason(reason: string): string {
  const r = reason.trim();
  if (r.length > APPROVAL_REASON_MAX)
    throw invalid("invalid_request", `reason is longer than ${APPROVAL_REASON_MAX} characters`, { field: "reason" });
  return r;
}

export async function askApproval(d: ApprovalGateDeps, g: ApprovalAsk): Promise<ApprovalVerdict> {
  const reason = checkReason(g.reason);
  const verdict = await d.approvals.evaluateApproval(
    {
      action: g.action,
      agents: g.agents.map((a) => ({ id: a.id, name: a.name, attributes: a.attributes, tags: a.tags })),
    },
    { actor: g.actor },
  );
  if (!verdict.required) return { kind: "run" };
  if (!g.breakGlass) return { kind: "hold", reason };
  if (g.actor.role !== "admin")
    throw forbidden("break_glass_forbidden", "only an admin may act without the approval a policy asks for");
  if (!reason)
    throw invalid("break_glass_reason_required", "breaking glass needs a reason: it is audited as critical", {
      field: "reason",
    });
  await d.events.tx(async (_db, emit) => {
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
        ...g.metadata,
      },
    });
  });
  return { kind: "run" };
}

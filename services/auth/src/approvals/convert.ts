import { REPLANNABLE_ACTIONS, type ApprovalPolicy, type ChangeRequest } from "@orch/contracts";
import type { PolicyRow } from "./policies-db.js";
import type { DecisionRow, RequestRow } from "./requests-db.js";

export function toApprovalPolicy(p: PolicyRow): Omit<ApprovalPolicy, "$typeName"> {
  return {
    name: p.name,
    description: p.description,
    actions: p.actions,
    selector: p.selector,
    approvalsRequired: p.approvals_required,
    approvers: p.approvers,
    requesterMayApprove: p.requester_may_approve,
    expiresAfterSeconds: p.expires_after_seconds,
    createdAt: p.created_at,
    updatedAt: p.updated_at,
    createdBy: p.created_by,
    maxAccessSeconds: p.max_access_seconds,
    source: p.source,
    commit: p.source_commit,
  };
}

export function toChangeRequest(r: RequestRow, decisions: DecisionRow[]): Omit<ChangeRequest, "$typeName"> {
  return {
    id: r.id,
    action: r.action,
    status: r.status,
    policy: r.policy,
    approvalsRequired: r.approvals_required,
    requester: { $typeName: "orch.v1.ChangeRequester", id: r.requester_id, name: r.requester_name },
    targetType: r.target_type,
    targetName: r.target_name,
    summary: r.summary,
    reason: r.reason,
    content: r.content as ChangeRequest["content"],
    contentHash: r.content_hash,
    decisions: decisions
      .filter((d) => d.request_id === r.id)
      .map((d) => ({
        $typeName: "orch.v1.ChangeDecision" as const,
        operatorId: d.operator_id,
        operatorName: d.operator_name,
        decision: d.decision,
        comment: d.comment,
        at: d.at,
      })),
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    decidedAt: r.decided_at ?? 0,
    executedAt: r.executed_at ?? 0,
    result: r.result,
    error: r.error,
    replannable: r.status === "pending" && (REPLANNABLE_ACTIONS as readonly string[]).includes(r.action),
  };
}

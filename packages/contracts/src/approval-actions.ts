/**
 * The actions an approval policy can hold for four-eyes review (docs/approvals.md). The closed
 * list: policies naming anything else are refused, and the executing services submit only these.
 */
export const APPROVAL_ACTIONS = [
  "assignment.apply",
  "agent.apply",
  "command.run",
  "terminal.open",
  "secret.write",
  "catalog.write",
] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

export function isApprovalAction(v: string): v is ApprovalAction {
  return (APPROVAL_ACTIONS as readonly string[]).includes(v);
}

/** The statuses of a change request; only `pending` can still be decided. */
export const CHANGE_REQUEST_STATUSES = [
  "pending",
  "approved",
  "denied",
  "cancelled",
  "expired",
  "executed",
  "failed",
] as const;
export type ChangeRequestStatus = (typeof CHANGE_REQUEST_STATUSES)[number];

/** Approver grammar: an operator by name, a role, or an SSO group. */
export const APPROVER_RE = /^(operator|role|group):(.{1,200})$/;
export const APPROVER_ROLES = ["admin", "operator"] as const;

/**
 * The actions an approval policy can hold for four-eyes review (docs/approvals.md). The closed
 * list, and only actions whose executing service enforces it: a policy naming anything else is
 * refused, so no admin can believe an action is held that is not. Fleet command runs, terminal
 * opens, secret writes and catalog changes join as their services enforce approval.
 */
export const APPROVAL_ACTIONS = [
  "assignment.apply",
  // An apply to one agent (POST /agents/{id}/apply), held with a plan of that agent.
  "agent.apply",
  // Just-in-time access: a request for temporary access; its policy names the approvers and the
  // longest duration (max_access_seconds). Agentless: only policies with selector `*` cover it.
  "access.request",
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

/** Roles a just-in-time access request may ask for. */
export const ACCESS_ROLES = ["admin"] as const;
/** Bounds of a policy's max_access_seconds, and its default. */
export const ACCESS_SECONDS = { min: 60, max: 604_800, default: 28_800 } as const;

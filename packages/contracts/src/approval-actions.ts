/**
 * The actions an approval policy can hold for four-eyes review (docs/approvals.md). The closed
 * list, and only actions whose executing service enforces it: a policy naming anything else is
 * refused, so no admin can believe an action is held that is not.
 */
export const APPROVAL_ACTIONS = [
  "assignment.apply",
  // An apply to one agent (POST /agents/{id}/apply), held with a plan of that agent.
  "agent.apply",
  // A fleet command run (POST /runs), held with its argv or script and its resolved targets.
  "command.run",
  // Opening a terminal on an agent: held with the agent and the reason; approval gives the requester
  // one pass to open it.
  "terminal.open",
  // Creating, updating or deleting a secret; the new value stays sealed in the secrets service until
  // approval. Agentless: only policies with selector `*` cover it.
  "secret.write",
  // Creating, changing or deleting an assignment or module that no git source owns. Agentless.
  "catalog.write",
  // Just-in-time access: a request for temporary access; its policy names the approvers and the
  // longest duration (max_access_seconds). Agentless: only policies with selector `*` cover it.
  "access.request",
] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

/** Actions that touch no agent: only a policy whose selector is `*` covers them. */
export const AGENTLESS_ACTIONS: readonly ApprovalAction[] = ["access.request", "secret.write", "catalog.write"];

/**
 * Actions whose held content goes stale (modules, values or targets change): their requester, or an
 * admin, may re-plan a pending request in place (docs/approvals.md#re-planning). Applies start a
 * fresh plan; a run resolves its targets again.
 */
export const REPLANNABLE_ACTIONS: readonly ApprovalAction[] = ["assignment.apply", "agent.apply", "command.run"];

export function isApprovalAction(v: string): v is ApprovalAction {
  return (APPROVAL_ACTIONS as readonly string[]).includes(v);
}

/** How long a requester's reason (or a break-glass justification) may be. */
export const APPROVAL_REASON_MAX = 500;

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

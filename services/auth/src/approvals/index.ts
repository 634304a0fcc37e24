// Approval policies and change requests (docs/approvals.md): the ApprovalService handlers and the
// expiry job, served by the auth service.
import type { ApprovalService } from "@orch/contracts";
import type { Handlers } from "@orch/kit";
import type { AuthDeps } from "../deps.js";
import type { ApprovalsContext, ChangeExecutors, ChangeReplanners } from "./context.js";
import { ACCESS_ACTION, accessExecutor, accessHandlers } from "./access.js";
import { decideHandlers } from "./decide.js";
import { endDueGrants, startGrantExpiry } from "./grant-expiry.js";
import { expireDue, startExpiry } from "./expiry.js";
import { policyHandlers } from "./handlers-policies.js";
import { requestHandlers } from "./handlers-requests.js";
import { replanHandlers } from "./replan.js";
import { sourcePolicyHandlers } from "./source-policies.js";

/** `executors`: the other services' (by action); the auth service's own (access grants) are added here. */
export function approvalsContext(
  deps: AuthDeps,
  executors: ChangeExecutors = {},
  replanners: ChangeReplanners = {},
): ApprovalsContext {
  const c: ApprovalsContext = { deps, executors, replanners };
  c.executors = { ...executors, [ACCESS_ACTION]: accessExecutor(c) };
  return c;
}

export function approvalHandlers(c: ApprovalsContext): Handlers<typeof ApprovalService> {
  return {
    ...policyHandlers(c),
    ...requestHandlers(c),
    ...decideHandlers(c),
    ...replanHandlers(c),
    ...accessHandlers(c),
    ...sourcePolicyHandlers(c),
  };
}

export {
  accessHandlers,
  decideHandlers,
  endDueGrants,
  expireDue,
  policyHandlers,
  replanHandlers,
  requestHandlers,
  sourcePolicyHandlers,
  startExpiry,
  startGrantExpiry,
};
export type {
  ApprovalsContext,
  ChangeExecutor,
  ChangeExecutors,
  ChangeReplanner,
  ChangeReplanners,
  ApproverRef,
} from "./context.js";
export type { RequestRow } from "./requests-db.js";

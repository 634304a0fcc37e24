// Approval policies and change requests (docs/approvals.md): the ApprovalService handlers and the
// expiry job, served by the auth service.
import type { ApprovalService } from "@orch/contracts";
import type { Handlers } from "@orch/kit";
import type { AuthDeps } from "../deps.js";
import type { ApprovalsContext, ChangeExecutors } from "./context.js";
import { decideHandlers } from "./decide.js";
import { expireDue, startExpiry } from "./expiry.js";
import { policyHandlers } from "./handlers-policies.js";
import { requestHandlers } from "./handlers-requests.js";

export function approvalsContext(deps: AuthDeps, executors: ChangeExecutors = {}): ApprovalsContext {
  return { deps, executors };
}

export function approvalHandlers(c: ApprovalsContext): Handlers<typeof ApprovalService> {
  return { ...policyHandlers(c), ...requestHandlers(c), ...decideHandlers(c) };
}

export { decideHandlers, expireDue, policyHandlers, requestHandlers, startExpiry };
export type { ApprovalsContext, ChangeExecutor, ChangeExecutors, ApproverRef } from "./context.js";
export type { RequestRow } from "./requests-db.js";

import { z } from "zod";
import { APPROVAL_ACTIONS, NAME_RE, checkName } from "@orch/contracts";
import { int32Field, ruled } from "../schemas.js";

/**
 * Request shapes of /api/v1/approval-policies. Types and sizes only: the auth service checks the
 * rest (actions, selector grammar, approvers that exist) and answers with the same codes.
 */

/** A policy named in the path of a read or delete: unknown names are the service's 404. */
export const PolicyParams = z.object({ name: z.string().min(1).max(64) });
/** A policy being created or replaced. */
export const NewPolicyParams = z.object({ name: ruled(checkName, NAME_RE) });

export const PutPolicyBody = z.object({
  description: z.string().max(1000).optional(),
  actions: z
    .array(z.string().max(64))
    .max(APPROVAL_ACTIONS.length * 2)
    .describe(`actions the policy holds for approval: ${APPROVAL_ACTIONS.join(", ")}`),
  selector: z
    .string()
    .max(4096)
    .optional()
    .describe("agent selector (assignment grammar); `*` or absent = every agent and actions without agents"),
  approvals_required: int32Field().describe("approvals needed, 1..10"),
  approvers: z
    .array(z.string().max(256))
    .max(100)
    .describe("`operator:<name>`, `role:admin`, `role:operator` (every operator) or `group:<sso group>`"),
  requester_may_approve: z.boolean().optional().describe("whether the requester may approve; default false"),
  expires_after_seconds: int32Field()
    .optional()
    .describe("seconds a request stays pending before it expires, 60..2592000; default 86400"),
  max_access_seconds: int32Field()
    .optional()
    .describe("for access.request: the longest access a request may ask for, 60..604800 seconds; default 28800"),
});

/** The PutApprovalPolicy request for a validated body. */
export function putPolicyRequest(name: string, b: z.infer<typeof PutPolicyBody>) {
  return {
    name,
    description: b.description ?? "",
    actions: b.actions,
    selector: b.selector ?? "",
    approvalsRequired: b.approvals_required,
    approvers: b.approvers,
    requesterMayApprove: b.requester_may_approve ?? false,
    expiresAfterSeconds: b.expires_after_seconds ?? 0,
    maxAccessSeconds: b.max_access_seconds ?? 0,
  };
}

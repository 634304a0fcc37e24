import { z } from "zod";
import type { ApprovalPolicy } from "@orch/contracts";
import { iso } from "../schemas.js";

export const ApprovalPolicyOut = z.object({
  name: z.string(),
  description: z.string(),
  actions: z.array(z.string()),
  selector: z.string(),
  approvals_required: z.number().int(),
  approvers: z.array(z.string()),
  requester_may_approve: z.boolean(),
  expires_after_seconds: z.number().int(),
  max_access_seconds: z.number().int().describe("for access.request: the longest access a request may ask for"),
  created_at: z.string(),
  updated_at: z.string(),
  created_by: z.string().describe("id of the operator who created it"),
  source: z
    .string()
    .nullable()
    .describe("the git source managing it (change it in the repository); null when written through the API"),
  commit: z.string().nullable().describe("the source commit it came from; null when written through the API"),
});
export const ApprovalPolicyList = z.object({
  policies: z.array(ApprovalPolicyOut),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});

export function approvalPolicyJson(p: ApprovalPolicy): z.infer<typeof ApprovalPolicyOut> {
  return {
    name: p.name,
    description: p.description,
    actions: [...p.actions],
    selector: p.selector,
    approvals_required: p.approvalsRequired,
    approvers: [...p.approvers],
    requester_may_approve: p.requesterMayApprove,
    expires_after_seconds: p.expiresAfterSeconds,
    max_access_seconds: p.maxAccessSeconds,
    created_at: iso(p.createdAt),
    updated_at: iso(p.updatedAt),
    created_by: p.createdBy,
    source: p.source || null,
    commit: p.commit || null,
  };
}

import { z } from "zod";
import { ACCESS_ROLES, APPROVAL_REASON_MAX } from "@orch/contracts";
import { int32Field, pageQuery, qBool } from "../schemas.js";

/** Request shapes of just-in-time access (docs/approvals.md). */

export const AccessRequestBody = z.object({
  agent_selector: z
    .string()
    .max(4096)
    .optional()
    .describe("agents to reach besides your scope (assignment grammar), e.g. `role=db` or `name in (db-1)`"),
  role: z.enum(ACCESS_ROLES).optional().describe("the admin role, for the duration"),
  reason: z.string().max(APPROVAL_REASON_MAX).describe("why (required; the approvers read it)"),
  duration_seconds: int32Field().describe("how long, up to the policy's max_access_seconds"),
});

export const GrantListQuery = pageQuery.extend({
  active: qBool.optional().describe("only grants in force"),
  operator_id: z.string().max(64).optional().describe("admins: only this operator's"),
});
export const GrantParams = z.object({ id: z.string().min(1).max(64) });
export const RevokeBody = z.object({ comment: z.string().max(2000).optional() });

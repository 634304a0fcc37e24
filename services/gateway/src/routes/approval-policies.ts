import { ApprovalService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery } from "../schemas.js";
import { ApprovalPolicyList, ApprovalPolicyOut, approvalPolicyJson } from "./approval-policies-json.js";
import { NewPolicyParams, PolicyParams, PutPolicyBody, putPolicyRequest } from "./approval-policies-schemas.js";

/**
 * /approval-policies: which actions need a second pair of eyes, and whose (docs/approvals.md). Every
 * operator may read them (a requester should know what is held and who approves; a policy holds no
 * secret); only an admin writes them.
 */
export function approvalPolicyRoutes(ctx: GatewayContext) {
  const approvals = rpcClient(ctx.nc, "auth", ApprovalService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "GET",
      path: "/api/v1/approval-policies",
      auth: "operator",
      summary: "List the approval policies, by name",
      tags: ["approvals"],
      query: pageQuery,
      responses: { 200: ApprovalPolicyList },
      errors: { 400: ["invalid_limit", "invalid_cursor"] },
      async handler({ query, call }) {
        const r = await approvals.listApprovalPolicies({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return {
          policies: r.policies.map(approvalPolicyJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/approval-policies/{name}",
      auth: "operator",
      summary: "One approval policy",
      tags: ["approvals"],
      params: PolicyParams,
      responses: { 200: ApprovalPolicyOut },
      errors: { 404: ["approval_policy_not_found"] },
      async handler({ params, call }) {
        return approvalPolicyJson(await approvals.getApprovalPolicy({ name: params.name }, call));
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/approval-policies/{name}",
      auth: "admin",
      summary: "Create or replace an approval policy",
      description:
        "Pending change requests keep the approvers and approvals_required they were submitted under; the new rules apply to later requests.",
      tags: ["approvals"],
      params: NewPolicyParams,
      body: PutPolicyBody,
      responses: { 200: ApprovalPolicyOut },
      errors: { 400: ["invalid_approval_policy", "unknown_approver"], 409: ["managed_by_source"] },
      async handler({ params, body, call }) {
        return approvalPolicyJson(await approvals.putApprovalPolicy(putPolicyRequest(params.name, body), call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/approval-policies/{name}",
      auth: "admin",
      summary: "Remove an approval policy (pending requests it held stay pending)",
      tags: ["approvals"],
      params: PolicyParams,
      responses: { 204: null },
      errors: { 404: ["approval_policy_not_found"], 409: ["managed_by_source"] },
      async handler({ params, call }) {
        await approvals.deleteApprovalPolicy({ name: params.name }, call);
      },
    }),
  ];
}

import { ApprovalService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { AccessGrantList, AccessGrantOut, grantJson } from "./access-json.js";
import { AccessRequestBody, GrantListQuery, GrantParams, RevokeBody } from "./access-schemas.js";
import { ChangeRequestOut, changeRequestJson } from "./change-requests-json.js";

/** Just-in-time access (docs/approvals.md): requests, and the grants their approval gives. */
export function accessRoutes(ctx: GatewayContext) {
  const approvals = rpcClient(ctx.nc, "auth", ApprovalService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "POST",
      path: "/api/v1/access-requests",
      auth: "operator",
      summary: "Ask for temporary access: a wider agent selector and/or the admin role, for a duration",
      description:
        "Becomes a pending change request (action `access.request`) under the policy that covers it; its approval grants the access, which ends by itself at expiry (closing the terminals and streams it allowed) or when revoked.",
      tags: ["approvals"],
      body: AccessRequestBody,
      responses: { 201: ChangeRequestOut },
      errors: {
        400: ["invalid_access_request", "access_duration_too_long"],
        409: ["access_requests_disabled"],
      },
      async handler({ body, call }, reply) {
        const req = {
          agentSelector: body.agent_selector ?? "",
          role: body.role ?? "",
          reason: body.reason,
          durationSeconds: body.duration_seconds,
        };
        reply.code(201);
        return changeRequestJson(await approvals.requestAccess(req, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/access-grants",
      auth: "operator",
      summary: "List access grants, newest first (yours; an admin sees everyone's)",
      tags: ["approvals"],
      query: GrantListQuery,
      responses: { 200: AccessGrantList },
      errors: { 400: ["invalid_limit", "invalid_cursor"] },
      async handler({ query, call }) {
        const r = await approvals.listAccessGrants(
          {
            active: query.active ?? false,
            operatorId: query.operator_id ?? "",
            limit: query.limit ?? 0,
            cursor: query.cursor ?? "",
          },
          call,
        );
        return { grants: r.grants.map(grantJson), has_more: r.nextCursor !== "", next_cursor: r.nextCursor || null };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/access-grants/{id}/revoke",
      auth: "operator",
      summary: "End an access grant now (an admin, or its holder giving it up)",
      tags: ["approvals"],
      params: GrantParams,
      body: RevokeBody,
      responses: { 200: AccessGrantOut },
      errors: { 403: ["not_change_requester"], 404: ["access_grant_not_found"], 409: ["access_grant_ended"] },
      async handler({ params, body, call }) {
        return grantJson(await approvals.revokeAccessGrant({ id: params.id, comment: body.comment ?? "" }, call));
      },
    }),
  ];
}

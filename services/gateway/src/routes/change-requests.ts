import { ApprovalService, type ErrorReason } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { ChangeRequestList, ChangeRequestOut, changeRequestJson } from "./change-requests-json.js";
import { ChangeRequestParams, ChangeRequestQuery, DecisionBody } from "./change-requests-schemas.js";

const DECIDE_409: ErrorReason[] = ["change_request_not_pending", "change_request_expired", "already_decided"];

/** /change-requests: actions held for approval, and the approvers' decisions (docs/approvals.md). */
export function changeRequestRoutes(ctx: GatewayContext) {
  const approvals = rpcClient(ctx.nc, "auth", ApprovalService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "GET",
      path: "/api/v1/change-requests",
      auth: "operator",
      summary: "List change requests, newest first",
      tags: ["approvals"],
      query: ChangeRequestQuery,
      responses: { 200: ChangeRequestList },
      errors: { 400: ["invalid_limit", "invalid_cursor"] },
      async handler({ query, call }) {
        const req = {
          status: query.status ?? "",
          mine: query.mine ?? false,
          toApprove: query.to_approve ?? false,
          limit: query.limit ?? 0,
          cursor: query.cursor ?? "",
        };
        const r = await approvals.listChangeRequests(req, call);
        return {
          requests: r.requests.map(changeRequestJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/change-requests/{id}",
      auth: "operator",
      summary: "One change request with what it would do and its decisions",
      tags: ["approvals"],
      params: ChangeRequestParams,
      responses: { 200: ChangeRequestOut },
      errors: { 404: ["change_request_not_found"] },
      async handler({ params, call }) {
        return changeRequestJson(await approvals.getChangeRequest({ id: params.id }, call));
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/change-requests/{id}/approve",
      auth: "operator",
      summary: "Approve a pending change request; the last approval needed executes it",
      description:
        "Refused with 409 plan_changed when what the request would do changed since it was submitted: nothing is executed, the approval is not recorded, and the requester re-plans it (`POST …/replan`).",
      tags: ["approvals"],
      params: ChangeRequestParams,
      body: DecisionBody,
      responses: { 200: ChangeRequestOut },
      errors: {
        403: ["not_an_approver", "own_change_request"],
        404: ["change_request_not_found"],
        409: [...DECIDE_409, "plan_changed"],
      },
      async handler({ params, body, call }) {
        const r = await approvals.approveChangeRequest({ id: params.id, comment: body.comment ?? "" }, call);
        return changeRequestJson(r);
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/change-requests/{id}/deny",
      auth: "operator",
      summary: "Deny a pending change request; it ends",
      tags: ["approvals"],
      params: ChangeRequestParams,
      body: DecisionBody,
      responses: { 200: ChangeRequestOut },
      errors: { 403: ["not_an_approver", "own_change_request"], 404: ["change_request_not_found"], 409: DECIDE_409 },
      async handler({ params, body, call }) {
        const r = await approvals.denyChangeRequest({ id: params.id, comment: body.comment ?? "" }, call);
        return changeRequestJson(r);
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/change-requests/{id}/cancel",
      auth: "operator",
      summary: "Withdraw a pending change request (its requester or an admin)",
      tags: ["approvals"],
      params: ChangeRequestParams,
      body: DecisionBody,
      responses: { 200: ChangeRequestOut },
      errors: {
        403: ["not_change_requester"],
        404: ["change_request_not_found"],
        409: ["change_request_not_pending", "change_request_expired"],
      },
      async handler({ params, body, call }) {
        const r = await approvals.cancelChangeRequest({ id: params.id, comment: body.comment ?? "" }, call);
        return changeRequestJson(r);
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/change-requests/{id}/replan",
      auth: "operator",
      summary: "Plan a pending change request again as it would run now (its requester or an admin)",
      description:
        "For applies whose plan went stale (an approval answered `plan_changed`): the action is frozen again from the current modules, values and targets and a fresh plan starts (`content.plan_run_id` or `content.plan_operation_id`). The request keeps its id and reason; approvals given so far are cleared and the approvers are asked again (`change_request.replanned`).",
      tags: ["approvals"],
      params: ChangeRequestParams,
      body: DecisionBody,
      responses: { 200: ChangeRequestOut },
      errors: {
        403: ["not_change_requester"],
        404: ["change_request_not_found"],
        409: ["change_request_not_pending", "change_request_expired", "replan_impossible"],
      },
      async handler({ params, body, call }) {
        const r = await approvals.replanChangeRequest({ id: params.id, comment: body.comment ?? "" }, call);
        return changeRequestJson(r);
      },
    }),
  ];
}

import { z } from "zod";
import { AuthService, checkName, NAME_RE, type ErrorReason } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { OperatorOut, pageQuery, ruled } from "../schemas.js";
import { operatorJson } from "./operators-json.js";
import { AgentSelector, OperatorId } from "./operators-schemas.js";

const SCOPE_ERRORS: ErrorReason[] = ["invalid_selector", "admin_cannot_be_scoped"];

export function operatorRoutes(ctx: GatewayContext) {
  const auth = rpcClient(ctx.nc, "auth", AuthService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "GET",
      path: "/api/v1/operators",
      auth: "operator",
      summary: "List operators",
      tags: ["operators"],
      query: pageQuery,
      responses: {
        200: z.object({ operators: z.array(OperatorOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      async handler({ query, call }) {
        const r = await auth.listOperators({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return {
          operators: r.operators.map(operatorJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/operators",
      auth: "admin",
      summary: "Add an operator",
      tags: ["operators"],
      body: z.object({
        name: ruled(checkName, NAME_RE),
        public_key: z.string().max(200),
        role: z.enum(["admin", "operator"]).default("operator"),
        agent_selector: AgentSelector.nullable().optional(),
      }),
      responses: { 201: OperatorOut },
      errors: { 400: ["invalid_public_key", ...SCOPE_ERRORS], 409: ["operator_exists", "public_key_in_use"] },
      async handler({ body, call }) {
        const { name, public_key: publicKey, role } = body;
        const req = { name, publicKey, role, agentSelector: body.agent_selector ?? "" };
        return operatorJson(await auth.createOperator(req, call));
      },
    }),
    route({
      method: "PATCH",
      path: "/api/v1/operators/{operator_id}",
      auth: "admin",
      summary: 'Change an operator\'s agent selector (scope); null or "" clears it',
      description:
        "Open streams of the operator end (as on a revocation) so nothing outlives the old scope; its tokens stay valid.",
      tags: ["operators"],
      params: OperatorId,
      body: z.object({ agent_selector: AgentSelector.nullable() }).strict(),
      responses: { 200: OperatorOut },
      errors: { 400: SCOPE_ERRORS, 404: ["operator_not_found"] },
      async handler({ params, body, call }) {
        const req = { id: params.operator_id, agentSelector: body.agent_selector ?? "" };
        return operatorJson(await auth.updateOperator(req, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/operators/{operator_id}",
      auth: "operator",
      summary: "Get one operator (by id or name)",
      tags: ["operators"],
      params: OperatorId,
      responses: { 200: OperatorOut },
      errors: { 404: ["operator_not_found"] },
      async handler({ params, call }) {
        return operatorJson(await auth.getOperator({ id: params.operator_id }, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/operators/{operator_id}",
      auth: "admin",
      summary: "Remove an operator and revoke its tokens",
      tags: ["operators"],
      params: OperatorId,
      responses: { 204: null },
      errors: { 404: ["operator_not_found"], 409: ["last_admin"] },
      async handler({ params, call }) {
        await auth.removeOperator({ id: params.operator_id }, call);
      },
    }),
  ];
}

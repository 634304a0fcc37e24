import type { FastifyReply } from "fastify";
import { z } from "zod";
import { StateService, type DriftCheck, type Operation } from "@orch/contracts";
import { rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route, type RouteSpec } from "../route.js";
import { pageQuery, Ulid } from "../schemas.js";
import {
  BelievedOut,
  DriftCheckOut,
  DriftOut,
  OperationDetailOut,
  OperationsPage,
  OutputOut,
  believedJson,
  driftJson,
  operationDetailJson,
  operationJson,
  outputJson,
} from "./state-json.js";
import { NodeId, OperationsQuery, RunAgentBody, WaitQuery } from "./state-schemas.js";

/**
 * The state area: per-agent apply/plan/drift, operations, believed state (modules and assignments
 * have their own route modules).
 * Times are RFC 3339, except a module's `uploaded_at` (Unix seconds, docs/modules.md#times-in-the-api).
 */
export function stateRoutes(ctx: GatewayContext): RouteSpec[] {
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
  return [...stateRunRoutes(ctx, state), ...driftRoutes(state), ...stateReadRoutes(state)];
}

const isOpen = (status: string) => status === "pending" || status === "running";

function sendOperation(reply: FastifyReply, op: Operation) {
  // A held apply answers its plan (finished or not) with 202: the apply itself has not happened.
  reply.code(isOpen(op.status) || (op.kind === "plan" && op.changeRequestId) ? 202 : 200).send(operationDetailJson(op));
  return reply;
}

function sendDriftCheck(reply: FastifyReply, c: DriftCheck) {
  const op = c.operation!;
  reply
    .code(isOpen(op.status) ? 202 : 200)
    .send({ operation: operationDetailJson(op), drift: c.drift ? driftJson(c.drift) : null });
  return reply;
}

/** The calls that start an operation: apply, plan and the drift check, each able to wait for the end. */
function stateRunRoutes(ctx: GatewayContext, state: Client<typeof StateService>): RouteSpec[] {
  const waitCall = <C extends object>(call: C, wait: number) => ({ ...call, timeoutMs: ctx.timeoutMs + wait * 1000 });
  const run = (kind: "apply" | "plan") =>
    route({
      method: "POST",
      path: `/api/v1/agents/{node_id}/${kind}`,
      auth: "operator",
      summary:
        kind === "apply"
          ? "Apply modules to one agent"
          : "Plan modules against one agent (check mode: nothing changes)",
      description: `Starts an operation (202). A disconnected agent gives an \`unreachable\` operation; every operation ends by \`state.operation_timeout_seconds\` (\`timed_out\`).${
        kind === "apply"
          ? " When an approval policy covers the agent the apply does not run: it becomes a change request (`change_request_id`, 202) and the operation returned is the plan of what it would do; it executes once approved (docs/approvals.md). An admin may pass `break_glass: true` with a `reason` instead."
          : ""
      }`,
      tags: ["state"],
      params: NodeId,
      query: WaitQuery,
      body: kind === "apply" ? RunAgentBody : RunAgentBody.pick({ modules: true }),
      responses: { 202: OperationDetailOut, 200: OperationDetailOut },
      errors:
        kind === "apply"
          ? {
              400: ["break_glass_reason_required"],
              403: ["break_glass_forbidden"],
              404: ["agent_not_found", "module_not_found"],
              409: ["agent_not_approved"],
            }
          : { 404: ["agent_not_found", "module_not_found"], 409: ["agent_not_approved"] },
      async handler({ params, query, body, call }, reply) {
        const wait = query.wait ?? 0;
        // A plan's body has neither field.
        const b = body as z.infer<typeof RunAgentBody>;
        const approval = { reason: b.reason ?? "", breakGlass: b.break_glass ?? false };
        return sendOperation(
          reply,
          await state.runAgent(
            { nodeId: params.node_id, kind, modules: body.modules, waitSeconds: wait, ...approval },
            waitCall(call, wait),
          ),
        );
      },
    });
  return [
    run("apply"),
    run("plan"),
    route({
      method: "POST",
      path: "/api/v1/agents/{node_id}/drift",
      auth: "operator",
      summary: "Drift check: plan the agent's last successful apply snapshot",
      tags: ["state"],
      params: NodeId,
      query: WaitQuery,
      responses: { 202: DriftCheckOut, 200: DriftCheckOut },
      errors: { 404: ["agent_not_found"], 409: ["agent_not_approved", "no_snapshot"] },
      async handler({ params, query, call }, reply) {
        const wait = query.wait ?? 0;
        return sendDriftCheck(
          reply,
          await state.checkDrift({ nodeId: params.node_id, waitSeconds: wait }, waitCall(call, wait)),
        );
      },
    }),
  ];
}

function driftRoutes(state: Client<typeof StateService>): RouteSpec[] {
  return [
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/drift",
      auth: "operator",
      summary: "Drift records of an agent, newest first",
      tags: ["state"],
      params: NodeId,
      query: pageQuery,
      responses: {
        200: z.object({ records: z.array(DriftOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
      },
      async handler({ params, query, call }) {
        const r = await state.listDrift(
          { nodeId: params.node_id, limit: query.limit ?? 0, cursor: query.cursor ?? "" },
          call,
        );
        return { records: r.records.map(driftJson), has_more: r.nextCursor !== "", next_cursor: r.nextCursor || null };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/drift/latest",
      auth: "operator",
      summary: "The most recent drift record of an agent",
      tags: ["state"],
      params: NodeId,
      responses: { 200: DriftOut },
      errors: { 404: ["drift_not_found"] },
      async handler({ params, call }) {
        return driftJson(await state.getLatestDrift({ nodeId: params.node_id }, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/drift/{drift_id}",
      auth: "operator",
      summary: "One drift record",
      tags: ["state"],
      params: z.object({ drift_id: Ulid }),
      responses: { 200: DriftOut },
      errors: { 404: ["drift_not_found"] },
      async handler({ params, call }) {
        return driftJson(await state.getDrift({ id: params.drift_id }, call));
      },
    }),
  ];
}

/** Believed state and the operation lists and details, per agent and across the fleet. */
function stateReadRoutes(state: Client<typeof StateService>): RouteSpec[] {
  const listOps = async (nodeId: string, query: z.infer<typeof OperationsQuery>, call: object) => {
    const r = await state.listOperations(
      {
        nodeId,
        limit: query.limit ?? 0,
        cursor: query.cursor ?? "",
        kind: query.kind ?? "",
        status: query.status ?? "",
      },
      call,
    );
    return {
      operations: r.operations.map(operationJson),
      has_more: r.nextCursor !== "",
      next_cursor: r.nextCursor || null,
    };
  };

  return [
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/state",
      auth: "operator",
      summary: "Believed machine state: per resource, from the latest successful apply of its module",
      tags: ["state"],
      params: NodeId,
      responses: { 200: BelievedOut },
      async handler({ params, call }) {
        return believedJson(await state.getBelievedState({ nodeId: params.node_id }, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/state/operations",
      auth: "operator",
      summary: "State operations of one agent, newest first",
      tags: ["state"],
      params: NodeId,
      query: OperationsQuery,
      responses: { 200: OperationsPage },
      async handler({ params, query, call }) {
        return listOps(params.node_id, query, call);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/state/operations/{operation_id}",
      auth: "operator",
      summary: "One operation of an agent, with per-resource results",
      tags: ["state"],
      params: z.object({ node_id: z.string().min(1).max(128), operation_id: Ulid }),
      responses: { 200: OperationDetailOut },
      errors: { 404: ["operation_not_found"] },
      async handler({ params, call }) {
        return operationDetailJson(await state.getOperation({ id: params.operation_id, nodeId: params.node_id }, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/agents/{node_id}/state/operations/{operation_id}/output",
      auth: "operator",
      summary: "Captured stdout/stderr of an operation's exec resources",
      tags: ["state"],
      params: z.object({ node_id: z.string().min(1).max(128), operation_id: Ulid }),
      responses: { 200: OutputOut },
      errors: { 404: ["operation_not_found"] },
      async handler({ params, call }) {
        return outputJson(await state.getOperationOutput({ id: params.operation_id, nodeId: params.node_id }, call));
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/state/operations",
      auth: "operator",
      summary: "State operations across all agents, newest first",
      tags: ["state"],
      query: OperationsQuery.extend({ node_id: z.string().min(1).max(128).optional() }),
      responses: { 200: OperationsPage },
      async handler({ query, call }) {
        return listOps(query.node_id ?? "", query, call);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/state/operations/{operation_id}",
      auth: "operator",
      summary: "Operation detail with per-resource results",
      tags: ["state"],
      params: z.object({ operation_id: Ulid }),
      responses: { 200: OperationDetailOut },
      errors: { 404: ["operation_not_found"] },
      async handler({ params, call }) {
        return operationDetailJson(await state.getOperation({ id: params.operation_id, nodeId: "" }, call));
      },
    }),
  ];
}

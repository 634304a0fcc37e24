import type { FastifyReply } from "fastify";
import { z } from "zod";
import {
  StateService,
  type BelievedState,
  type DriftCheck,
  type DriftRecord,
  type Operation,
  type OperationOutput,
} from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { route, type RouteSpec } from "../route.js";
import { iso, pageQuery, qInt, Ulid } from "../schemas.js";
import { NAME } from "./modules.js";

/**
 * The state area: per-agent apply/plan/drift, operations, believed state (modules and assignments
 * have their own route modules).
 * Times are RFC 3339, except a module's `uploaded_at` (Unix seconds, docs/modules.md#times-in-the-api).
 */

const isoOrNull = (ms: number) => (ms > 0 ? iso(ms) : null);

const Summary = z.object({
  ok: z.number().int(),
  changed: z.number().int(),
  failed: z.number().int(),
  skipped: z.number().int(),
  unsupported: z.number().int(),
});
const ResultOut = z.object({
  id: z.string(),
  module: z.string(),
  type: z.string(),
  status: z.enum(["ok", "changed", "failed", "skipped", "unsupported"]),
  changed: z.boolean(),
  diff: z.string(),
  message: z.string(),
  duration_ms: z.number(),
  has_output: z.boolean(),
});
export const OperationStatus = z.enum(["pending", "running", "succeeded", "failed", "timed_out", "unreachable"]);
export const OperationOut = z.object({
  id: z.string(),
  node_id: z.string(),
  node_name: z.string(),
  kind: z.enum(["apply", "plan", "drift"]),
  modules: z.array(z.string()),
  status: OperationStatus,
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  deadline: z.string(),
  actor: z.object({ id: z.string(), name: z.string() }),
  summary: Summary,
  error_code: z
    .string()
    .nullable()
    .describe(
      "stable reason when the operation failed as a whole, e.g. template_error, secret_not_permitted, agent_unreachable",
    ),
  error: z.string().nullable(),
  assignment: z.string().nullable(),
  run_id: z.string().nullable(),
  remediates: z
    .string()
    .nullable()
    .describe("enforcement: the id of the drift record this apply corrects (actor `system:enforce`)"),
});
export const OperationDetailOut = OperationOut.extend({ results: z.array(ResultOut) });

export function operationJson(o: Operation) {
  return {
    id: o.id,
    node_id: o.nodeId,
    node_name: o.nodeName,
    kind: o.kind as z.infer<typeof OperationOut>["kind"],
    modules: o.modules,
    status: o.status as z.infer<typeof OperationStatus>,
    created_at: iso(o.createdAt),
    started_at: isoOrNull(o.startedAt),
    finished_at: isoOrNull(o.finishedAt),
    deadline: iso(o.deadline),
    actor: { id: o.actorId, name: o.actorName },
    summary: {
      ok: o.summary?.ok ?? 0,
      changed: o.summary?.changed ?? 0,
      failed: o.summary?.failed ?? 0,
      skipped: o.summary?.skipped ?? 0,
      unsupported: o.summary?.unsupported ?? 0,
    },
    error_code: o.errorCode || null,
    error: o.error || null,
    assignment: o.assignment || null,
    run_id: o.runId || null,
    remediates: o.remediates || null,
  };
}

export const operationDetailJson = (o: Operation) => ({
  ...operationJson(o),
  results: o.results.map((r) => ({
    id: r.id,
    module: r.module,
    type: r.type,
    status: r.status as z.infer<typeof ResultOut>["status"],
    changed: r.changed,
    diff: r.diff,
    message: r.message,
    duration_ms: r.durationMs,
    has_output: r.hasOutput,
  })),
});

export const isOpen = (status: string) => status === "pending" || status === "running";

export const OutputOut = z.object({
  operation_id: z.string(),
  node_id: z.string(),
  outputs: z.array(z.object({ id: z.string(), module: z.string(), stdout: z.string(), stderr: z.string() })),
});
export const outputJson = (o: OperationOutput) => ({
  operation_id: o.operationId,
  node_id: o.nodeId,
  outputs: o.outputs.map((x) => ({ id: x.id, module: x.module, stdout: x.stdout, stderr: x.stderr })),
});

export const DriftOut = z.object({
  id: z.string(),
  node_id: z.string(),
  operation_id: z.string(),
  checked_at: z.string(),
  drifted: z.boolean(),
  resources: z.array(
    z.object({
      module: z.string(),
      id: z.string(),
      type: z.string(),
      status: z.string(),
      diff: z.string(),
      message: z.string(),
    }),
  ),
});
export const driftJson = (d: DriftRecord) => ({
  id: d.id,
  node_id: d.nodeId,
  operation_id: d.operationId,
  checked_at: iso(d.checkedAt),
  drifted: d.drifted,
  resources: d.resources.map((r) => ({
    module: r.module,
    id: r.id,
    type: r.type,
    status: r.status,
    diff: r.diff,
    message: r.message,
  })),
});

export const BelievedOut = z.object({
  node_id: z.string(),
  resources: z.array(
    z.object({
      module: z.string(),
      id: z.string(),
      type: z.string(),
      status: z.string(),
      observed: z.record(z.string(), z.unknown()),
      operation_id: z.string(),
      applied_at: z.string(),
    }),
  ),
});
export const believedJson = (b: BelievedState) => ({
  node_id: b.nodeId,
  resources: b.resources.map((r) => ({
    module: r.module,
    id: r.id,
    type: r.type,
    status: r.status,
    observed: (r.observed ?? {}) as Record<string, unknown>,
    operation_id: r.operationId,
    applied_at: iso(r.appliedAt),
  })),
});

const NodeId = z.object({ node_id: z.string().min(1).max(128) });
const WaitQuery = z.object({
  wait: qInt(0, 300)
    .optional()
    .describe("block up to this many seconds; 200 with the finished operation when it ended in time"),
});
const OperationsQuery = pageQuery.extend({
  kind: z.enum(["apply", "plan", "drift"]).optional(),
  status: OperationStatus.optional(),
});
const OperationsPage = z.object({
  operations: z.array(OperationOut),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
const DriftCheckOut = z.object({ operation: OperationDetailOut, drift: DriftOut.nullable() });

function sendOperation(reply: FastifyReply, op: Operation) {
  reply.code(isOpen(op.status) ? 202 : 200).send(operationDetailJson(op));
  return reply;
}

function sendDriftCheck(reply: FastifyReply, c: DriftCheck) {
  const op = c.operation!;
  reply
    .code(isOpen(op.status) ? 202 : 200)
    .send({ operation: operationDetailJson(op), drift: c.drift ? driftJson(c.drift) : null });
  return reply;
}

export function stateRoutes(ctx: GatewayContext): RouteSpec[] {
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
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
      description:
        "Starts an operation (202). A disconnected agent gives an `unreachable` operation; every operation ends by `state.operation_timeout_seconds` (`timed_out`).",
      tags: ["state"],
      params: NodeId,
      query: WaitQuery,
      body: z.object({ modules: z.array(NAME).min(1).max(100) }),
      responses: { 202: OperationDetailOut, 200: OperationDetailOut },
      errors: { 404: ["agent_not_found", "module_not_found"], 409: ["agent_not_approved"] },
      async handler({ params, query, body, call }, reply) {
        const wait = query.wait ?? 0;
        return sendOperation(
          reply,
          await state.runAgent(
            { nodeId: params.node_id, kind, modules: body.modules, waitSeconds: wait },
            waitCall(call, wait),
          ),
        );
      },
    });
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

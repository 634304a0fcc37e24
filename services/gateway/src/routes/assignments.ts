import type { FastifyReply } from "fastify";
import { z } from "zod";
import { StateService, type Assignment, type AssignmentRun } from "@orch/contracts";
import { pageCursor, rpcClient, type Client } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { pageQuery, qInt } from "../schemas.js";
import { RunStream } from "../sse/run-stream.js";
import { serveSse } from "../sse/serve.js";
import { AssignmentOut, RunOut, RunSummaryOut, assignmentJson, runJson, runSummaryJson } from "./assignments-json.js";
import {
  AssignmentName,
  Definition,
  PARAMETER_ERRORS,
  RunBody,
  RunParams,
  SELECTOR_GRAMMAR,
  WaitQuery,
  definitionMsg,
} from "./assignments-schemas.js";
import {
  approvalOf,
  CATALOG_APPROVAL_ERRORS,
  CATALOG_APPROVAL_NOTE,
  CatalogApprovalQuery,
  catalogApprovalFields,
  HeldOut,
  NAME,
  sentHeld,
} from "./modules-schemas.js";
import { OperationDetailOut, operationDetailJson } from "./state-json.js";

type StateClient = Client<typeof StateService>;

/** 202 while the fan-out runs; 200 when `wait` saw it end. */
function sendRun(reply: FastifyReply, run: AssignmentRun) {
  // A held apply has not run: 202 like any work still to come.
  reply.code(run.status === "running" || run.changeRequestId ? 202 : 200).send(runJson(run));
  return reply;
}

export function assignmentRoutes(ctx: GatewayContext) {
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
  const streams = new Set<RunStream>();
  // Open streams would otherwise keep the server from closing.
  ctx.app.addHook("preClose", async () => {
    for (const s of streams) s.close();
  });
  return [
    ...assignmentDefinitionRoutes(state),
    ...assignmentRunRoutes(ctx, state),
    ...runDetailRoutes(ctx, state, streams),
  ];
}

/** An assignment's definition: create, replace, list, read, delete. */
function assignmentDefinitionRoutes(state: StateClient) {
  return [
    route({
      method: "POST",
      path: "/api/v1/assignments",
      auth: "operator",
      summary: "Create an assignment: modules for the agents a selector matches",
      description: `${SELECTOR_GRAMMAR} ${CATALOG_APPROVAL_NOTE}`,
      tags: ["assignments"],
      body: Definition.extend({ name: NAME, ...catalogApprovalFields }),
      responses: { 201: AssignmentOut, 202: HeldOut },
      errors: {
        400: ["invalid_selector", ...PARAMETER_ERRORS, ...CATALOG_APPROVAL_ERRORS[400]],
        403: [...CATALOG_APPROVAL_ERRORS[403]],
        404: ["module_not_found"],
        409: ["assignment_exists"],
      },
      async handler({ body, call }, reply) {
        const a: Assignment = await state.createAssignment(
          { ...definitionMsg(body.name, body), ...approvalOf(body) },
          call,
        );
        return sentHeld(reply, a.held) || assignmentJson(a);
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/assignments/{name}",
      auth: "operator",
      summary: "Replace an assignment's selector, modules and description (and set enforce mode)",
      description: `Validated like create; records \`assignment.updated\` (with the previous values). Runs already started keep the selector and modules they started with; the next apply or plan uses the new ones. Without \`description\` (or with null) the description is cleared; without \`enforce\` enforce mode is unchanged. ${SELECTOR_GRAMMAR} ${CATALOG_APPROVAL_NOTE}`,
      tags: ["assignments"],
      params: AssignmentName,
      body: Definition.extend(catalogApprovalFields),
      responses: { 200: AssignmentOut, 202: HeldOut },
      errors: {
        400: ["invalid_selector", ...PARAMETER_ERRORS, ...CATALOG_APPROVAL_ERRORS[400]],
        403: [...CATALOG_APPROVAL_ERRORS[403]],
        404: ["assignment_not_found", "module_not_found"],
      },
      async handler({ params, body, call }, reply) {
        const a = await state.updateAssignment({ ...definitionMsg(params.name, body), ...approvalOf(body) }, call);
        return sentHeld(reply, a.held) || assignmentJson(a);
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/assignments",
      auth: "operator",
      summary: "List assignments by name",
      tags: ["assignments"],
      query: pageQuery,
      responses: {
        200: z.object({
          assignments: z.array(AssignmentOut),
          has_more: z.boolean(),
          next_cursor: z.string().nullable(),
        }),
      },
      async handler({ query, call }) {
        const r = await state.listAssignments({ limit: query.limit ?? 0, cursor: query.cursor ?? "" }, call);
        return {
          assignments: r.assignments.map(assignmentJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/assignments/{name}",
      auth: "operator",
      summary: "Get one assignment",
      tags: ["assignments"],
      params: AssignmentName,
      responses: { 200: AssignmentOut },
      errors: { 404: ["assignment_not_found"] },
      async handler({ params, call }) {
        return assignmentJson(await state.getAssignment({ name: params.name }, call));
      },
    }),
    route({
      method: "DELETE",
      path: "/api/v1/assignments/{name}",
      auth: "operator",
      summary: "Delete an assignment",
      description: CATALOG_APPROVAL_NOTE,
      tags: ["assignments"],
      params: AssignmentName,
      query: CatalogApprovalQuery,
      responses: { 204: null, 202: HeldOut },
      errors: { ...CATALOG_APPROVAL_ERRORS, 404: ["assignment_not_found"] },
      async handler({ params, query, call }, reply) {
        const held = await state.deleteAssignment({ name: params.name, ...approvalOf(query) }, call);
        // Sent here: the first 2xx of `responses` (by number) is 202, not the 204 of a done delete.
        return sentHeld(reply, held) || reply.code(204).send();
      },
    }),
  ];
}

/** Starting an apply or plan fan-out, and reading its runs. */
function assignmentRunRoutes(ctx: GatewayContext, state: StateClient) {
  const fanOut = (kind: "apply" | "plan") =>
    route({
      method: "POST",
      path: `/api/v1/assignments/{name}/${kind}`,
      auth: "operator",
      summary: `${kind === "apply" ? "Apply" : "Plan"} an assignment on every approved agent its selector matches`,
      description:
        "Fans out with a concurrency limit (`state.fanout_concurrency`). With `batch` the agents run in rolling batches (sorted by name); once more than `max_failures` operations failed no further batch starts and the remaining agents are listed as `not_started`. Follow progress with GET /assignments/{name}/runs/{run_id}." +
        (kind === "apply"
          ? " When an approval policy covers a matched agent the apply does not run: it becomes a change request (`change_request_id`, 202) and the run returned is the plan of what it would do; it executes once approved (docs/approvals.md). An admin may pass `break_glass: true` with a `reason` instead."
          : ""),
      tags: ["assignments"],
      params: AssignmentName,
      query: WaitQuery,
      body: RunBody,
      responses: { 202: RunOut, 200: RunOut },
      errors:
        kind === "apply"
          ? {
              400: ["invalid_batch", "break_glass_reason_required"],
              403: ["break_glass_forbidden"],
              404: ["assignment_not_found", "module_not_found"],
            }
          : { 400: ["invalid_batch"], 404: ["assignment_not_found", "module_not_found"] },
      async handler({ params, query, body, call }, reply) {
        const wait = query.wait ?? 0;
        const run = await state.runAssignment(
          {
            name: params.name,
            kind,
            batch: body?.batch === undefined ? "" : String(body.batch),
            ...(body?.max_failures !== undefined ? { maxFailures: body.max_failures } : {}),
            reason: body?.reason ?? "",
            breakGlass: body?.break_glass ?? false,
            waitSeconds: wait,
          },
          { ...call, timeoutMs: ctx.timeoutMs + wait * 1000 },
        );
        return sendRun(reply, run);
      },
    });
  return [
    fanOut("apply"),
    fanOut("plan"),
    route({
      method: "GET",
      path: "/api/v1/assignments/{name}/runs",
      auth: "operator",
      summary: "List an assignment's apply/plan runs, newest first",
      description:
        "At most 200 per page (default 50), without the per-agent operations (GET /assignments/{name}/runs/{run_id} has them). The runs of a deleted assignment are still listed; an assignment that never ran lists none.",
      tags: ["assignments"],
      params: AssignmentName,
      query: z.object({ limit: qInt(1, 200).optional(), cursor: z.string().max(200).optional() }),
      responses: {
        200: z.object({
          runs: z.array(RunSummaryOut),
          has_more: z.boolean(),
          next_cursor: z.string().nullable(),
        }),
      },
      errors: { 400: ["invalid_cursor"] },
      async handler({ params, query, call }) {
        const r = await state.listAssignmentRuns(
          { name: params.name, limit: query.limit ?? 0, cursor: query.cursor ?? "" },
          call,
        );
        return {
          runs: r.runs.map(runSummaryJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/assignments/{name}/runs/{run_id}",
      auth: "operator",
      summary: "Progress of one assignment apply/plan fan-out",
      tags: ["assignments"],
      params: RunParams,
      responses: { 200: RunOut },
      errors: { 404: ["run_not_found"] },
      async handler({ params, call }) {
        return runJson(await state.getAssignmentRun({ name: params.name, runId: params.run_id }, call));
      },
    }),
  ];
}

/** One run's operations and its live progress. */
function runDetailRoutes(ctx: GatewayContext, state: StateClient, streams: Set<RunStream>) {
  return [
    route({
      method: "GET",
      path: "/api/v1/assignments/{name}/runs/{run_id}/operations",
      auth: "operator",
      summary: "The operations of one run, with their per-resource results",
      description:
        "Newest first, at most 100 per page (results carry diffs). Secret values are masked. A scoped operator sees only the operations on agents it can reach. 404 `run_not_found` when the run does not belong to the assignment.",
      tags: ["assignments"],
      params: RunParams,
      query: z.object({ limit: qInt(1, 100).optional(), cursor: z.string().max(200).optional() }),
      responses: {
        200: z.object({
          operations: z.array(OperationDetailOut),
          has_more: z.boolean(),
          next_cursor: z.string().nullable(),
        }),
      },
      errors: { 400: ["invalid_cursor"], 404: ["run_not_found"] },
      async handler({ params, query, call }) {
        // A bad cursor is refused like on every list, before the run is looked up.
        const cursor = pageCursor(query.cursor, "ulid");
        // Also proves the run belongs to this assignment.
        await state.getAssignmentRun({ name: params.name, runId: params.run_id }, call);
        const r = await state.listOperations(
          {
            runId: params.run_id,
            withResults: true,
            limit: query.limit ?? 50,
            cursor,
            nodeId: "",
            kind: "",
            status: "",
          },
          call,
        );
        return {
          operations: r.operations.map(operationDetailJson),
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "GET",
      path: "/api/v1/assignments/{name}/runs/{run_id}/stream",
      auth: "operator",
      summary: "Live progress of one run (Server-Sent Events)",
      description:
        'text/event-stream: `event: run` with the whole run (as GET /assignments/{name}/runs/{run_id}) first and whenever it changes, then `event: end` (`data: {"status": …}`) once the status is final, and the stream closes. A comment every 15 s keeps the connection alive. A client that reconnects gets the current run again, so nothing is lost; a finished run answers with its final snapshot and `end` at once. `event: error` when the credential ends (sign-out, removal, expiry).',
      tags: ["assignments"],
      params: RunParams,
      responses: { 200: z.string().meta({ description: "text/event-stream" }) },
      errors: { 404: ["run_not_found"] },
      async handler(req, reply) {
        const { params, call } = req;
        const stream = new RunStream({
          nc: ctx.nc,
          log: ctx.log,
          registry: streams,
          state,
          call,
          name: params.name,
          runId: params.run_id,
          res: reply.raw,
        });
        return serveSse(ctx, req, reply, stream);
      },
    }),
  ];
}

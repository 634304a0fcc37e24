import type { FastifyReply } from "fastify";
import { z } from "zod";
import { StateService, type Assignment, type AssignmentRun } from "@orch/contracts";
import { pageCursor, rpcClient } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { route } from "../route.js";
import { iso, pageQuery, qInt, Ulid } from "../schemas.js";
import { RunStream } from "../sse/run-stream.js";
import { serveSse } from "../sse/serve.js";
import { NAME } from "./modules.js";
import { OperationDetailOut, operationDetailJson } from "./state.js";

const isoOrNull = (ms: number) => (ms > 0 ? iso(ms) : null);

export const AssignmentOut = z.object({
  name: z.string(),
  selector: z.string(),
  modules: z.array(z.string()),
  description: z.string().nullable(),
  created_at: z.string(),
  created_by: z.string(),
  enforce: z.boolean().describe("drift found by a scheduled check is re-applied (docs/enforce.md)"),
  source: z
    .string()
    .nullable()
    .describe("the git source managing the assignment (docs/sources.md); null when created here"),
  commit: z.string().nullable().describe("the source's commit the definition came from"),
  apply_on_sync: z.boolean().describe("a sync that changes it or its modules applies it (managed assignments only)"),
  sync_batch: z
    .string()
    .nullable()
    .describe('batch of the applies a sync starts: agents per batch ("5") or a percentage ("25%"); null = all at once'),
  sync_max_failures: z
    .number()
    .int()
    .nullable()
    .describe("an apply a sync starts stops launching batches once more operations than this failed; null = no limit"),
});

export const assignmentJson = (a: Assignment) => ({
  name: a.name,
  selector: a.selector,
  modules: a.modules,
  description: a.description ?? null,
  created_at: iso(a.createdAt),
  created_by: a.createdBy,
  enforce: a.enforce,
  source: a.source || null,
  commit: a.commit || null,
  apply_on_sync: a.applyOnSync,
  sync_batch: a.syncBatch || null,
  sync_max_failures: a.syncMaxFailures ?? null,
});

export const RunOut = z.object({
  run_id: z.string(),
  assignment: z.string(),
  kind: z.enum(["apply", "plan"]),
  status: z.enum(["running", "completed", "stopped", "interrupted"]),
  selector: z.string(),
  modules: z.array(z.string()),
  batch_size: z.number().int(),
  batches: z.number().int(),
  max_failures: z.number().int().nullable(),
  failures: z.number().int(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
  started_by: z.string(),
  source: z.string().nullable().describe("the git source whose sync or plan started the run"),
  commit: z.string().nullable().describe("the source's commit the run applied or planned"),
  operations: z.array(
    z.object({
      operation_id: z.string().nullable(),
      node_id: z.string(),
      name: z.string(),
      batch: z.number().int(),
      status: z
        .string()
        .describe("the operation's status, or queued (waiting for its batch) / not_started (the run stopped first)"),
    }),
  ),
});

export const runJson = (r: AssignmentRun) => ({
  run_id: r.id,
  assignment: r.assignment,
  kind: r.kind as "apply" | "plan",
  status: r.status as z.infer<typeof RunOut>["status"],
  selector: r.selector,
  modules: r.modules,
  batch_size: r.batchSize,
  batches: r.batches,
  max_failures: r.maxFailures ?? null,
  failures: r.failures,
  created_at: iso(r.createdAt),
  finished_at: isoOrNull(r.finishedAt),
  started_by: r.actorId,
  source: r.source || null,
  commit: r.commit || null,
  operations: r.targets.map((t) => ({
    operation_id: t.operationId || null,
    node_id: t.nodeId,
    name: t.name,
    batch: t.batch,
    status: t.status,
  })),
});

/** A run in a list: the per-agent operations are left out (GET the run for them). */
export const RunSummaryOut = RunOut.omit({ operations: true });
const runSummaryJson = (r: AssignmentRun) => {
  const { operations: _, ...summary } = runJson(r);
  return summary;
};

const AssignmentName = z.object({ name: z.string().min(1).max(128) });
const RunParams = z.object({ name: z.string().min(1).max(128), run_id: Ulid });
/** What an assignment is: the body of create (with its name) and of update (name in the path). */
const Definition = z.object({
  selector: z.string().min(1).max(4096),
  modules: z.array(NAME).min(1).max(100),
  description: z.string().max(1000).nullable().optional(),
  enforce: z
    .boolean()
    .optional()
    .describe(
      "enforce mode: drift a scheduled check finds is re-applied (outside maintenance windows, at most once per agent per `state.enforce_interval_seconds`); absent = false on create, unchanged on update",
    ),
});
const SELECTOR_GRAMMAR =
  "Selector grammar: `*`, or comma-separated terms that must all hold: `k=v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; keys are tags, or `name`, `node_id`, `attr.<attribute>`; values may use `*` globs. A parse error is 400 `invalid_selector` with the `position`.";
const definitionMsg = (name: string, body: z.infer<typeof Definition>) => ({
  name,
  selector: body.selector,
  modules: body.modules,
  ...(body.description != null ? { description: body.description } : {}),
  ...(body.enforce !== undefined ? { enforce: body.enforce } : {}),
});
const WaitQuery = z.object({
  wait: qInt(0, 300).optional().describe("block up to this many seconds for the whole fan-out; 200 when it finished"),
});
const RunBody = z
  .object({
    batch: z
      .union([
        z.number().int().min(1),
        z.string().regex(/^([1-9]\d*|([1-9]\d?|100)%)$/, 'must be a positive integer or a percentage such as "25%"'),
      ])
      .optional()
      .describe("rolling apply: agents per batch, or a percentage of the matched agents"),
    max_failures: z
      .number()
      .int()
      .min(0)
      // int32 on the bus (state.proto): a larger count could not be encoded and answered 500.
      .max(2_147_483_647)
      .optional()
      .describe("stop launching batches once more operations than this failed"),
  })
  .optional();

/** 202 while the fan-out runs; 200 when `wait` saw it end. */
function sendRun(reply: FastifyReply, run: AssignmentRun) {
  reply.code(run.status === "running" ? 202 : 200).send(runJson(run));
  return reply;
}

export function assignmentRoutes(ctx: GatewayContext) {
  const state = rpcClient(ctx.nc, "state", StateService, { timeoutMs: ctx.timeoutMs });
  const streams = new Set<RunStream>();
  // Open streams would otherwise keep the server from closing.
  ctx.app.addHook("preClose", async () => {
    for (const s of streams) s.close();
  });
  const fanOut = (kind: "apply" | "plan") =>
    route({
      method: "POST",
      path: `/api/v1/assignments/{name}/${kind}`,
      auth: "operator",
      summary: `${kind === "apply" ? "Apply" : "Plan"} an assignment on every approved agent its selector matches`,
      description:
        "Fans out with a concurrency limit (`state.fanout_concurrency`). With `batch` the agents run in rolling batches (sorted by name); once more than `max_failures` operations failed no further batch starts and the remaining agents are listed as `not_started`. Follow progress with GET /assignments/{name}/runs/{run_id}.",
      tags: ["assignments"],
      params: AssignmentName,
      query: WaitQuery,
      body: RunBody,
      responses: { 202: RunOut, 200: RunOut },
      errors: { 400: ["invalid_batch"], 404: ["assignment_not_found", "module_not_found"] },
      async handler({ params, query, body, call }, reply) {
        const wait = query.wait ?? 0;
        const run = await state.runAssignment(
          {
            name: params.name,
            kind,
            batch: body?.batch === undefined ? "" : String(body.batch),
            ...(body?.max_failures !== undefined ? { maxFailures: body.max_failures } : {}),
            waitSeconds: wait,
          },
          { ...call, timeoutMs: ctx.timeoutMs + wait * 1000 },
        );
        return sendRun(reply, run);
      },
    });

  return [
    route({
      method: "POST",
      path: "/api/v1/assignments",
      auth: "operator",
      summary: "Create an assignment: modules for the agents a selector matches",
      description: SELECTOR_GRAMMAR,
      tags: ["assignments"],
      body: Definition.extend({ name: NAME }),
      responses: { 201: AssignmentOut },
      errors: { 400: ["invalid_selector"], 404: ["module_not_found"], 409: ["assignment_exists"] },
      async handler({ body, call }) {
        const a: Assignment = await state.createAssignment(definitionMsg(body.name, body), call);
        return assignmentJson(a);
      },
    }),
    route({
      method: "PUT",
      path: "/api/v1/assignments/{name}",
      auth: "operator",
      summary: "Replace an assignment's selector, modules and description (and set enforce mode)",
      description: `Validated like create; records \`assignment.updated\` (with the previous values). Runs already started keep the selector and modules they started with; the next apply or plan uses the new ones. Without \`description\` (or with null) the description is cleared; without \`enforce\` enforce mode is unchanged. ${SELECTOR_GRAMMAR}`,
      tags: ["assignments"],
      params: AssignmentName,
      body: Definition,
      responses: { 200: AssignmentOut },
      errors: { 400: ["invalid_selector"], 404: ["assignment_not_found", "module_not_found"] },
      async handler({ params, body, call }) {
        return assignmentJson(await state.updateAssignment(definitionMsg(params.name, body), call));
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
      tags: ["assignments"],
      params: AssignmentName,
      responses: { 204: null },
      errors: { 404: ["assignment_not_found"] },
      async handler({ params, call }) {
        await state.deleteAssignment({ name: params.name }, call);
      },
    }),
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

import { z } from "zod";
import type { BelievedState, DriftRecord, Operation, OperationOutput } from "@orch/contracts";
import { iso } from "../schemas.js";

/**
 * The one place the state area's operations, drift records and believed state become JSON.
 * Times are RFC 3339.
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
  change_request_id: z
    .string()
    .optional()
    .describe(
      "set when an approval policy held the apply (202): this operation is the plan of what the change request would do; on an executed apply, the request it carried out",
    ),
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
    ...(o.changeRequestId ? { change_request_id: o.changeRequestId } : {}),
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

export const OperationsPage = z.object({
  operations: z.array(OperationOut),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
export const DriftCheckOut = z.object({ operation: OperationDetailOut, drift: DriftOut.nullable() });

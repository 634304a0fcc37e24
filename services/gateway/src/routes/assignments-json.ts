import { z } from "zod";
import type { Assignment, AssignmentRun } from "@orch/contracts";
import { iso } from "../schemas.js";

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
  parameters: z
    .record(z.string(), z.unknown())
    .describe("values given to its modules' declared parameters (docs/modules.md#parameters); {} when none"),
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
  parameters: (a.parameters ?? {}) as Record<string, unknown>,
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
  change_request_id: z
    .string()
    .optional()
    .describe(
      "present when an approval policy held the apply: this run is the plan of what it would do, and the apply waits for the change request's approval",
    ),
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
  ...(r.changeRequestId ? { change_request_id: r.changeRequestId } : {}),
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
export const runSummaryJson = (r: AssignmentRun) => {
  const { operations: _, ...summary } = runJson(r);
  return summary;
};

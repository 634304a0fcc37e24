import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type {
  Agent,
  AssignmentRunSchema,
  AssignmentSchema,
  BelievedResourceSchema,
  DriftRecordSchema,
  ModuleSchema,
  OperationSchema,
  SourceSchema,
} from "@orch/contracts";
import type { AssignmentRow, ModuleRow } from "./db/catalog.js";
import type { OperationRow } from "./db/operations.js";
import type { RunRow } from "./db/runs.js";
import type { SourceView } from "./db/sources.js";
import type { BelievedRow, DriftRow } from "./db/snapshots.js";
import type { AgentInfo } from "./deps.js";

/** Row → bus message. Times stay Unix ms; the gateway formats them for the API. */

export const moduleMsg = (m: ModuleRow, withContent: boolean): MessageInitShape<typeof ModuleSchema> => ({
  name: m.name,
  uploadedAt: m.uploaded_at,
  uploadedBy: m.uploaded_by,
  uploadedByName: m.uploaded_by_name,
  content: withContent ? m.content : "",
  description: m.description,
  resourceCount: m.resource_count,
  sha256: m.sha256,
  source: m.source ?? "",
  commit: m.source_commit,
  removedFromSource: m.removed_from_source,
  files: (m.files ?? []).map((f) => ({ path: f.path, digest: f.digest, size: BigInt(f.size) })),
});

export const assignmentMsg = (a: AssignmentRow): MessageInitShape<typeof AssignmentSchema> => ({
  name: a.name,
  selector: a.selector,
  modules: a.modules,
  ...(a.description !== null ? { description: a.description } : {}),
  createdAt: a.created_at,
  createdBy: a.created_by,
  enforce: a.enforce,
  source: a.source ?? "",
  commit: a.source_commit,
  applyOnSync: a.apply_on_sync,
  syncBatch: a.sync_batch,
  ...(a.sync_max_failures !== null ? { syncMaxFailures: a.sync_max_failures } : {}),
  parameters: a.parameters as JsonObject,
});

export const operationMsg = (o: OperationRow, withResults: boolean): MessageInitShape<typeof OperationSchema> => ({
  id: o.id,
  nodeId: o.node_id,
  nodeName: o.node_name,
  kind: o.kind,
  modules: o.modules,
  status: o.status,
  createdAt: o.created_at,
  startedAt: o.started_at ?? 0,
  finishedAt: o.finished_at ?? 0,
  deadline: o.deadline,
  actorId: o.actor_id,
  actorName: o.actor_name,
  summary: o.summary,
  results: withResults
    ? o.results.map((r) => ({
        id: r.id,
        module: r.module,
        type: r.type,
        status: r.status,
        changed: r.changed,
        diff: r.diff,
        message: r.message,
        durationMs: r.duration_ms,
        hasOutput: r.has_output,
      }))
    : [],
  errorCode: o.error_code,
  error: o.error,
  assignment: o.assignment,
  runId: o.run_id ?? "",
  remediates: o.remediates ?? "",
  changeRequestId: o.change_request_id ?? "",
});

export const driftMsg = (d: DriftRow): MessageInitShape<typeof DriftRecordSchema> => ({
  id: d.id,
  nodeId: d.node_id,
  operationId: d.operation_id,
  checkedAt: d.checked_at,
  drifted: d.drifted,
  resources: d.resources,
});

export const believedMsg = (b: BelievedRow): MessageInitShape<typeof BelievedResourceSchema> => ({
  module: b.module,
  id: b.resource_id,
  type: b.type,
  status: b.status,
  observed: b.observed as JsonObject,
  operationId: b.operation_id,
  appliedAt: b.applied_at,
});

/** The status of a target without an operation: waiting for its batch, or never started once the run ended. */
export const unstartedStatus = (runStatus: string): "queued" | "not_started" =>
  runStatus === "running" ? "queued" : "not_started";

/** A run with each target's operation status (`queued` while waiting for its batch, `not_started` once the run ended without it). */
export function runMsg(
  r: RunRow,
  ops: ReadonlyArray<Pick<OperationRow, "id" | "node_id" | "status">>,
): MessageInitShape<typeof AssignmentRunSchema> {
  const byNode = new Map(ops.map((o) => [o.node_id, o]));
  return {
    id: r.id,
    assignment: r.assignment,
    kind: r.kind,
    status: r.status,
    selector: r.selector,
    modules: r.modules,
    batchSize: r.batch_size,
    batches: r.batches,
    ...(r.max_failures !== null ? { maxFailures: r.max_failures } : {}),
    failures: r.failures,
    createdAt: r.created_at,
    finishedAt: r.finished_at ?? 0,
    actorId: r.actor_id,
    source: r.source,
    commit: r.source_commit,
    targets: r.targets.map((t) => {
      const op = byNode.get(t.node_id);
      return {
        nodeId: t.node_id,
        name: t.name,
        batch: t.batch,
        operationId: op?.id ?? "",
        status: op?.status ?? unstartedStatus(r.status),
      };
    }),
  };
}

export const agentInfo = (a: Agent): AgentInfo => ({
  nodeId: a.nodeId,
  name: a.name,
  status: a.status,
  connected: a.connected,
  tags: { ...a.tags },
  attributes: { ...a.attributes },
});

export const sourceMsg = (s: SourceView): MessageInitShape<typeof SourceSchema> => ({
  name: s.name,
  url: s.url,
  branch: s.branch,
  path: s.path,
  intervalS: s.interval_s,
  auth: s.auth_kind,
  status: s.status,
  commit: s.commit,
  syncedAt: Number(s.synced_at),
  attemptedAt: Number(s.attempted_at),
  nextSyncAt: Number(s.next_sync_at),
  error: s.error,
  errors: s.errors,
  failures: s.failures,
  attemptedCommit: s.attempted_commit,
  moduleCount: s.module_count,
  assignmentCount: s.assignment_count,
  createdAt: Number(s.created_at),
  createdBy: s.created_by,
});

import type { MessageInitShape } from "@bufbuild/protobuf";
import { COMMAND_TARGET_STATUSES, type CommandRunSchema, type CommandTargetSchema } from "@orch/contracts";
import type { CommandRunRow, CommandTargetRow } from "../db/commands.js";

/** Row → bus message. Times stay Unix ms (0 = not yet); the gateway formats them for the API. */

export const targetMsg = (t: CommandTargetRow, withOutput: boolean): MessageInitShape<typeof CommandTargetSchema> => ({
  nodeId: t.node_id,
  name: t.name,
  batch: t.batch,
  status: t.status,
  ...(t.exit_code !== null ? { exitCode: t.exit_code } : {}),
  signal: t.signal,
  startedAt: t.started_at ?? 0,
  finishedAt: t.finished_at ?? 0,
  durationMs: t.duration_ms ?? 0,
  stdout: withOutput ? new Uint8Array(t.stdout) : new Uint8Array(),
  stderr: withOutput ? new Uint8Array(t.stderr) : new Uint8Array(),
  stdoutTruncated: t.stdout_truncated,
  stderrTruncated: t.stderr_truncated,
  error: t.error,
  jobId: t.job_id ?? "",
});

/** Every status with its count, zero included, so a client never has to know the list. */
export function countsOf(byStatus: ReadonlyMap<string, number> | undefined): Record<string, number> {
  return Object.fromEntries(COMMAND_TARGET_STATUSES.map((s) => [s, byStatus?.get(s) ?? 0]));
}

export function commandRunMsg(
  r: CommandRunRow,
  counts: Record<string, number>,
  targets?: readonly CommandTargetRow[],
  withOutput = false,
): MessageInitShape<typeof CommandRunSchema> {
  return {
    id: r.id,
    status: r.status,
    selector: r.selector ?? "",
    nodeIds: r.node_ids ?? [],
    argv: r.argv ?? [],
    script: r.script ?? "",
    envKeys: r.env_keys,
    timeoutSeconds: r.timeout_s,
    batch: r.batch,
    batchSize: r.batch_size,
    batches: r.batches,
    ...(r.max_failures !== null ? { maxFailures: r.max_failures } : {}),
    total: Object.values(counts).reduce((a, b) => a + b, 0),
    counts,
    maintenanceWindow: r.maintenance_window ?? "",
    actorId: r.actor_id,
    actorName: r.actor_name,
    createdAt: r.created_at,
    finishedAt: r.finished_at ?? 0,
    cancelledBy: r.cancelled_by ?? "",
    targets: (targets ?? []).map((t) => targetMsg(t, withOutput)),
    changeRequestId: r.change_request_id ?? "",
  };
}

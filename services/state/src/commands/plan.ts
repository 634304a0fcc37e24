import { createHash } from "node:crypto";
import type { Actor, EventInput } from "@orch/kit";
import type { CommandRunRow, CommandTargetRow } from "../db/commands.js";
import { batchSize } from "../engine/fanout.js";
import type { Resolved } from "./targets.js";
import type { CommandSpec } from "./validate.js";

/** What a start records: the run, its targets (launchable first, in batches; then those that never run, batch 0). */
export interface PlannedRun {
  run: CommandRunRow;
  targets: CommandTargetRow[];
  /** Something to launch: otherwise the run ends as soon as it is recorded. */
  live: boolean;
}

const NO_RESULT = {
  exit_code: null,
  signal: "",
  started_at: null,
  finished_at: null,
  duration_ms: null,
  stdout: Buffer.alloc(0),
  stderr: Buffer.alloc(0),
  stdout_truncated: false,
  stderr_truncated: false,
  error: "",
} as const;

export function planCommandRun(p: {
  id: string;
  /** A job id per launchable target. */
  nextId: () => string;
  spec: CommandSpec;
  resolved: readonly Resolved[];
  window: string | null;
  actor: Actor;
  now: number;
  /** The approved change request the run executes (command.run), if any. */
  changeRequestId?: string | undefined;
}): PlannedRun {
  const { id, spec, now } = p;
  const launchable = p.resolved.flatMap((r) => (r.kind === "agent" ? [r.agent] : []));
  const size = batchSize(spec.batch, launchable.length);
  const targets: CommandTargetRow[] = launchable.map((agent, i) => ({
    ...NO_RESULT,
    run_id: id,
    seq: i + 1,
    node_id: agent.nodeId,
    name: agent.name,
    batch: Math.floor(i / size) + 1,
    status: "queued",
    job_id: p.nextId(),
  }));
  for (const r of p.resolved)
    if (r.kind === "skip")
      targets.push({
        ...NO_RESULT,
        run_id: id,
        seq: targets.length + 1,
        node_id: r.nodeId,
        name: r.name,
        batch: 0,
        status: r.status,
        job_id: null,
      });
  const live = launchable.length > 0;
  const run: CommandRunRow = {
    id,
    status: "running",
    selector: spec.selector,
    node_ids: spec.nodeIds,
    argv: spec.argv,
    script: spec.script,
    env_keys: Object.keys(spec.env).sort(),
    timeout_s: spec.timeoutS,
    batch: spec.batch,
    batch_size: live ? size : 0,
    batches: live ? Math.ceil(launchable.length / size) : 0,
    max_failures: spec.maxFailures,
    maintenance_window: p.window,
    actor_id: p.actor.id,
    actor_name: p.actor.name,
    cancelled_by: null,
    created_at: now,
    updated_at: now,
    finished_at: null,
    change_request_id: p.changeRequestId ?? null,
  };
  return { run, targets, live };
}

/** Who approved a run that executes a change request (docs/approvals.md). */
export interface RunApproval {
  changeRequestId: string;
  approvers: string[];
}

/** The run.started event; what ran is named by digest for a script: the event log is no place for a script body. */
export function runStartedEvent(
  planned: PlannedRun,
  spec: CommandSpec,
  actor: Actor,
  approval?: RunApproval,
): EventInput {
  const { run, targets } = planned;
  const what = spec.argv
    ? { command: spec.argv }
    : {
        script_sha256: createHash("sha256")
          .update(spec.script ?? "")
          .digest("hex"),
        script_bytes: Buffer.byteLength(spec.script ?? "", "utf8"),
      };
  return {
    type: "run.started",
    summary: `command run ${run.id} started on ${targets.length} agent${targets.length === 1 ? "" : "s"} by ${actor.name}`,
    actor,
    target: { id: run.id, name: run.id, type: "run" },
    metadata: {
      run_id: run.id,
      ...what,
      ...(spec.selector !== null ? { selector: spec.selector } : { node_ids: spec.nodeIds }),
      targets: targets.length,
      env_keys: run.env_keys,
      timeout_s: run.timeout_s,
      batch: run.batch,
      max_failures: run.max_failures,
      maintenance_window: run.maintenance_window,
      ...(approval ? { change_request_id: approval.changeRequestId, approved_by: approval.approvers } : {}),
    },
  };
}

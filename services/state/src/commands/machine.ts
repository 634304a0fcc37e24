import { COMMAND_FAILED_STATUSES, type CommandRunStatus, type CommandTargetStatus } from "@orch/contracts";

/**
 * The life of one fleet command run on the replica that drives it, as a pure transition function:
 * `step(state, event)` returns the next state and the effects the driver (driver.ts) must perform,
 * in order. Nothing here does I/O; results of I/O come back as events.
 *
 *   idle → counting → checking ⇄ (running → beating) → ending → ended
 *
 * `counting` reads the failures known before launch (named agents that cannot run); each batch is
 * `checking` (the run re-read: still running?), `running` (its targets through the limiter) and
 * `beating` (the heartbeat that closes it). Any I/O step that fails ends the run interrupted; a
 * cancel, from this replica or seen by polling, is a flag: the targets still waiting for a slot
 * see it and do not start, and the run stops at the next check.
 */

/** What the machine needs of the run: fixed for the whole drive. */
export interface RunPlan {
  id: string;
  batches: number;
  maxFailures: number | null;
}

type Live = { run: RunPlan; failures: number; cancelled: boolean };

export type DriveState =
  | (Live & { phase: "idle" | "counting" })
  | (Live & { phase: "checking" | "running" | "beating"; batch: number })
  | (Live & { phase: "ending" | "ended"; status: CommandRunStatus });

export type DriveEvent =
  | { type: "start" }
  /** Failed targets already recorded when the drive starts. */
  | { type: "counted"; failures: number }
  /** The run as re-read before a batch (undefined: gone). */
  | { type: "checked"; status: CommandRunStatus | undefined }
  | { type: "batch_ended"; statuses: readonly CommandTargetStatus[] }
  | { type: "beat_stored" }
  /** A cancel was recorded (told on this replica, or seen by polling the run). */
  | { type: "cancel" }
  /** An I/O step threw. */
  | { type: "failed"; error: unknown }
  /** The run's end was written (or could not be). */
  | { type: "finished" };

export type DriveEffect =
  | { type: "count_failures" }
  | { type: "read_run" }
  /** Launch the batch's targets through the limiter; report `batch_ended` with their statuses. */
  | { type: "run_batch"; batch: number }
  | { type: "store_beat" }
  /** Tell the agents running a target of this run to stop. */
  | { type: "cancel_sent" }
  | { type: "log"; level: "info" | "error"; fields: Record<string, unknown>; message: string }
  /** Stop the timers and forget the run's cancel trigger, then write its end; report `finished`. */
  | { type: "finish"; status: CommandRunStatus };

export interface DriveTransition {
  state: DriveState;
  effects: DriveEffect[];
}

export function initialDriveState(run: RunPlan): DriveState {
  return { phase: "idle", run, failures: 0, cancelled: false };
}

/** The drive has ended or is writing its end: nothing is launched or cancelled any more. */
export const isOver = (s: DriveState) => s.phase === "ending" || s.phase === "ended";

const failedCount = (statuses: readonly CommandTargetStatus[]) =>
  statuses.filter((s) => COMMAND_FAILED_STATUSES.includes(s)).length;

function end(s: DriveState, status: CommandRunStatus, effects: DriveEffect[] = []): DriveTransition {
  return {
    state: { run: s.run, failures: s.failures, cancelled: s.cancelled, phase: "ending", status },
    effects: [...effects, { type: "finish", status }],
  };
}

/** Batch `batch` comes next: checked unless a cancel came, or the last batch is done. */
function nextBatch(s: DriveState, batch: number): DriveTransition {
  // A cancelled run ends "completed": finishCommandRun turns a cancelling run into cancelled.
  if (s.cancelled || batch > s.run.batches) return end(s, "completed");
  return { state: { ...live(s), phase: "checking", batch }, effects: [{ type: "read_run" }] };
}

const live = (s: DriveState): Live => ({ run: s.run, failures: s.failures, cancelled: s.cancelled });

function afterBeat(s: DriveState & { batch: number }): DriveTransition {
  const { maxFailures, batches, id } = s.run;
  if (maxFailures !== null && s.failures > maxFailures && s.batch < batches)
    return end(s, "stopped", [
      {
        type: "log",
        level: "info",
        fields: { run: id, failures: s.failures, max_failures: maxFailures, batch: s.batch },
        message: "command run stopped: too many failures",
      },
    ]);
  return nextBatch(s, s.batch + 1);
}

export function step(s: DriveState, e: DriveEvent): DriveTransition {
  const stay: DriveTransition = { state: s, effects: [] };
  if (e.type === "cancel") {
    if (s.cancelled || isOver(s)) return stay;
    return { state: { ...s, cancelled: true }, effects: [{ type: "cancel_sent" }] };
  }
  if (e.type === "failed") {
    if (isOver(s)) return stay;
    return end(s, "interrupted", [
      { type: "log", level: "error", fields: { err: e.error, run: s.run.id }, message: "command run failed" },
    ]);
  }
  if (e.type === "finished") return s.phase === "ending" ? { state: { ...s, phase: "ended" }, effects: [] } : stay;
  switch (s.phase) {
    case "idle":
      return e.type === "start" ? { state: { ...s, phase: "counting" }, effects: [{ type: "count_failures" }] } : stay;
    case "counting":
      return e.type === "counted" ? nextBatch({ ...s, failures: e.failures }, 1) : stay;
    case "checking":
      if (e.type !== "checked") return stay;
      if (e.status !== "running") return end(s, "completed");
      return { state: { ...s, phase: "running" }, effects: [{ type: "run_batch", batch: s.batch }] };
    case "running":
      if (e.type !== "batch_ended") return stay;
      return {
        state: { ...s, phase: "beating", failures: s.failures + failedCount(e.statuses) },
        effects: [{ type: "store_beat" }],
      };
    case "beating":
      return e.type === "beat_stored" ? afterBeat(s) : stay;
    default:
      return stay;
  }
}

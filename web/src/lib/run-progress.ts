/**
 * The counts a run page shows, from a run snapshot (RunOut). The same rules as the state service's
 * progress messages: done = succeeded, failed = failed or timed out, running = pending or running;
 * queued (waiting for its batch) and not_started (the run stopped first) as the API says.
 */

export interface RunCounts {
  total: number;
  done: number;
  failed: number;
  unreachable: number;
  running: number;
  queued: number;
  notStarted: number;
}

export interface RunLike {
  status: string;
  operations: readonly { status: string }[];
}

export const FINAL_RUN_STATUSES: ReadonlySet<string> = new Set(["completed", "stopped", "interrupted"]);

/** True once the run will not change any more. */
export const runFinished = (run: { status: string }) => FINAL_RUN_STATUSES.has(run.status);

/** True when an operation's status is final (its results will not change). */
export const operationFinished = (status: string) =>
  status === "succeeded" || status === "failed" || status === "timed_out" || status === "unreachable";

export function runCounts(run: RunLike): RunCounts {
  const c: RunCounts = { total: 0, done: 0, failed: 0, unreachable: 0, running: 0, queued: 0, notStarted: 0 };
  for (const op of run.operations) {
    c.total++;
    switch (op.status) {
      case "succeeded":
        c.done++;
        break;
      case "failed":
      case "timed_out":
        c.failed++;
        break;
      case "unreachable":
        c.unreachable++;
        break;
      case "pending":
      case "running":
        c.running++;
        break;
      case "not_started":
        c.notStarted++;
        break;
      default:
        // "queued", and anything newer the API may add, waits for its turn.
        c.queued++;
    }
  }
  return c;
}

/**
 * "Not started" on the page: agents that have not begun — queued for a later batch while the run
 * goes on, or never started because it stopped.
 */
export const notStartedCount = (c: RunCounts) => c.queued + c.notStarted;

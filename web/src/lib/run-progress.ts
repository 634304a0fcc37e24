/**
 * The counts a run page shows, from a run snapshot (RunOut): the state service's own rule
 * (countRunTargets in @orch/contracts/run-progress), applied to the run's operations.
 */
import { countRunTargets, operationIsFinal, runIsFinal, type RunCounts } from "@orch/contracts/run-progress";

export type { RunCounts };

export interface RunLike {
  status: string;
  operations: readonly { status: string }[];
}

/** True once the run will not change any more. */
export const runFinished = (run: { status: string }) => runIsFinal(run.status);

/** True when an operation's status is final (its results will not change). */
export const operationFinished = operationIsFinal;

export const runCounts = (run: RunLike): RunCounts => countRunTargets(run.operations.map((o) => o.status));

/**
 * "Not started" on the page: agents that have not begun — queued for a later batch while the run
 * goes on, or never started because it stopped.
 */
export const notStartedCount = (c: RunCounts) => c.queued + c.notStarted;

/**
 * Assignment-run progress: the subjects (RunProgress in proto/orch/v1/state.proto) and the one rule
 * that turns target statuses into counts. The state service publishes the counts, the gateway's run
 * stream ends on a final status, the console shows the same counts from a run snapshot: all three
 * import this file (the console through the browser-safe `@orch/contracts/run-progress`, so it
 * imports nothing).
 *
 * Subjects: two tokens below `orch.state`, so no RPC subject (`orch.state.<Method>`) can collide
 * with them and a gateway allowed to request `orch.state.*` still cannot publish progress.
 */
export const RUN_PROGRESS_SUBJECTS = "orch.state.runs.*";

export const runProgressSubject = (runId: string): string => `orch.state.runs.${runId}`;

export interface RunCounts {
  total: number;
  /** Operations that succeeded. */
  done: number;
  /** Operations that failed or timed out. */
  failed: number;
  /** Operations whose agent was unreachable. */
  unreachable: number;
  /** Operations pending or running. */
  running: number;
  /** Agents waiting for their batch. */
  queued: number;
  /** Agents never started: the run stopped first. */
  notStarted: number;
}
export type RunCounter = Exclude<keyof RunCounts, "total">;

const COUNTER: Readonly<Record<string, RunCounter>> = {
  succeeded: "done",
  failed: "failed",
  timed_out: "failed",
  unreachable: "unreachable",
  pending: "running",
  running: "running",
  queued: "queued",
  not_started: "notStarted",
};

/** The counter a target status adds to; a status newer than this rule waits as queued. */
export const runCounterOf = (status: string): RunCounter => COUNTER[status] ?? "queued";

/** Counts of a run's targets, by their statuses (an operation's, or queued / not_started). */
export function countRunTargets(statuses: Iterable<string>): RunCounts {
  const c: RunCounts = { total: 0, done: 0, failed: 0, unreachable: 0, running: 0, queued: 0, notStarted: 0 };
  for (const s of statuses) {
    c.total++;
    c[runCounterOf(s)]++;
  }
  return c;
}

/** Run statuses after which nothing changes any more (running is the only live one). */
export const FINAL_RUN_STATUSES: ReadonlySet<string> = new Set(["completed", "stopped", "interrupted"]);
export const runIsFinal = (status: string): boolean => FINAL_RUN_STATUSES.has(status);

/** Operation statuses after which its results do not change. */
const FINAL_OPERATION_STATUSES: ReadonlySet<string> = new Set(["succeeded", "failed", "timed_out", "unreachable"]);
export const operationIsFinal = (status: string): boolean => FINAL_OPERATION_STATUSES.has(status);

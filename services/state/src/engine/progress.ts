import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { countRunTargets, RunProgressSchema, runProgressSubject } from "@orch/contracts";
import { unstartedStatus } from "../convert.js";
import { runsDb, type RunTally } from "../db/runs.js";
import type { StateDeps } from "../deps.js";

/**
 * The status of every target of a run, as its view (runMsg) shows them: each operation's, and
 * queued / not_started for the targets without one (a run has at most one operation per target).
 */
function* targetStatuses(run: RunTally): Generator<string> {
  let started = 0;
  for (const [status, n] of Object.entries(run.operations)) {
    started += n;
    for (let i = 0; i < n; i++) yield status;
  }
  const unstarted = unstartedStatus(run.status);
  for (let i = started; i < run.targets; i++) yield unstarted;
}

/** The counts of a run as its current view shows them (the rule: countRunTargets in the contracts). */
export function progressOf(run: RunTally, at: number): MessageInitShape<typeof RunProgressSchema> {
  return {
    runId: run.id,
    assignment: run.assignment,
    kind: run.kind,
    status: run.status,
    ...countRunTargets(targetStatuses(run)),
    at,
  };
}

/**
 * Reads of one run's progress start at least this far apart (changes in between coalesce): 250 ms,
 * and 250 ms more per 1,000 targets up to 2 s, since each read costs in proportion to the run.
 */
export const progressGap = (targets: number) => Math.min(2000, 250 * Math.max(1, Math.ceil(targets / 1000)));

export interface ProgressPublisher {
  /** Something in the run changed: publish its counts soon (bursts coalesce into few reads). */
  changed(runId: string): void;
  /** Resolves when nothing is being read or waiting to be published. */
  idle(): Promise<void>;
}

/**
 * Publishes RunProgress on `orch.state.runs.<run_id>` after a fan-out's operation starts or ends
 * and when the run ends. Each message is read from the database, so it is the truth at `at`
 * whatever order the changes happened in; per run at most one read is in flight and one more is
 * pending, reads start progressGap apart, so a burst of N changes costs at most two reads and
 * the last message is never stale.
 * Best effort (core NATS): subscribers re-read the run to cover lost messages.
 */
export function createProgressPublisher(deps: StateDeps): ProgressPublisher {
  const { pool, nc, clock, log } = deps;
  const runs = new Map<string, { pending: boolean; done: Promise<void> }>();

  /** Publishes the run's counts; returns its number of targets. */
  async function publish(runId: string): Promise<number> {
    const run = await runsDb.tally(pool, runId);
    if (!run) return 0;
    const msg = create(RunProgressSchema, progressOf(run, clock.now()));
    nc.publish(runProgressSubject(runId), toBinary(RunProgressSchema, msg));
    return run.targets;
  }

  async function loop(runId: string) {
    for (;;) {
      const entry = runs.get(runId)!;
      entry.pending = false;
      const started = Date.now();
      let targets = 0;
      try {
        targets = await publish(runId);
      } catch (err) {
        log.debug({ err: (err as Error).message, run: runId }, "run progress not published");
      }
      if (!entry.pending) break;
      // Each read covers the whole run (every target and operation): on a large fleet reading
      // back to back would cost the database as much as the operations themselves.
      const wait = started + progressGap(targets) - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    runs.delete(runId);
  }

  return {
    changed(runId) {
      const entry = runs.get(runId);
      if (entry) {
        entry.pending = true;
        return;
      }
      const e = { pending: true, done: Promise.resolve() };
      runs.set(runId, e);
      e.done = loop(runId);
    },
    async idle() {
      while (runs.size) await Promise.allSettled([...runs.values()].map((r) => r.done));
    },
  };
}

import { create, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { countRunTargets, RunProgressSchema, runProgressSubject } from "@orch/contracts";
import { runMsg } from "../convert.js";
import { operationsDb } from "../db/operations.js";
import { runsDb } from "../db/runs.js";
import type { StateDeps } from "../deps.js";

/** The counts of a run as its current view shows them (the rule: countRunTargets in the contracts). */
export function progressOf(run: ReturnType<typeof runMsg>, at: number): MessageInitShape<typeof RunProgressSchema> {
  const counts = countRunTargets((run.targets ?? []).map((t) => t.status ?? ""));
  return {
    runId: run.id ?? "",
    assignment: run.assignment ?? "",
    kind: run.kind ?? "",
    status: run.status ?? "",
    ...counts,
    at,
  };
}

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
 * pending, so a burst of N changes costs at most two reads and the last message is never stale.
 * Best effort (core NATS): subscribers re-read the run to cover lost messages.
 */
export function createProgressPublisher(deps: StateDeps): ProgressPublisher {
  const { pool, nc, clock, log } = deps;
  const runs = new Map<string, { pending: boolean; done: Promise<void> }>();

  async function publish(runId: string) {
    const run = await runsDb.get(pool, runId);
    if (!run) return;
    const msg = create(RunProgressSchema, progressOf(runMsg(run, await operationsDb.ofRun(pool, runId)), clock.now()));
    nc.publish(runProgressSubject(runId), toBinary(RunProgressSchema, msg));
  }

  async function loop(runId: string) {
    for (;;) {
      const entry = runs.get(runId)!;
      entry.pending = false;
      try {
        await publish(runId);
      } catch (err) {
        log.debug({ err: (err as Error).message, run: runId }, "run progress not published");
      }
      if (!entry.pending) break;
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

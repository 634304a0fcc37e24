import { COMMAND_FAILED_STATUSES, type CommandRunStatus } from "@orch/contracts";
import { createStepper, groupCommit, type Actor, type Stepper } from "@orch/kit";
import { commandRunsDb, type CommandRunRow, type CommandTargetRow } from "../db/commands.js";
import type { Clients, StateDeps } from "../deps.js";
import { untilStored } from "../engine/db-retry.js";
import { HEARTBEAT_MS } from "../engine/heartbeat.js";
import type { Limiter } from "../engine/limit.js";
import { runEvents } from "./events.js";
import { finishCommandRun } from "./finish.js";
import { initialDriveState, step, type DriveEffect, type DriveEvent, type DriveState } from "./machine.js";
import { runTarget, type TargetRunContext } from "./target-run.js";

/** CancelCommand is a nudge: an agent that does not answer quickly is not waited for. */
export const CANCEL_TIMEOUT_MS = 2000;
/** How often a driver re-reads its run for a cancel recorded by another replica. */
const CANCEL_POLL_MS = 1000;
/** Targets marked running per statement at most. */
const MAX_MARKS = 1000;

export interface DriveInput {
  run: CommandRunRow;
  /** Launchable targets (batch ≥ 1) with their job ids, in launch order. */
  targets: CommandTargetRow[];
  /** Env values live only here, for the batches still to launch. */
  env: Record<string, string>;
  actor: Actor;
}

export interface CommandDriver {
  /** Drives a recorded run's batches in the background. */
  start(input: DriveInput): Promise<void>;
  /** A cancel was recorded: if this replica drives the run, it stops launching at once. */
  cancelled(runId: string): void;
  drain(): Promise<void>;
}

/**
 * The background part of a fleet command run, on the replica that started it: batches through a
 * shared limiter, each target a RunCommand to its agent whose output chunks are relayed to the
 * run's subject as they come, max_failures, and cancellation from any replica (told directly on
 * this one, seen by polling the run's status on the others, and re-read before each batch).
 * The run's course is machine.ts; this file does its I/O.
 */
export function createCommandDriver(deps: StateDeps, clients: Clients, limiter: Limiter): CommandDriver {
  const inflight = new Map<string, Promise<void>>();
  /** The cancel trigger of each run this replica drives. */
  const live = new Map<string, () => void>();
  return {
    async start(input) {
      const { done } = new RunDrive(deps, clients, limiter, input, live);
      inflight.set(input.run.id, done);
      void done.finally(() => inflight.delete(input.run.id));
    },
    cancelled(runId) {
      live.get(runId)?.();
    },
    async drain() {
      while (inflight.size) await Promise.allSettled([...inflight.values()]);
    },
  };
}

function byBatch(targets: readonly CommandTargetRow[]): Map<number, CommandTargetRow[]> {
  const out = new Map<number, CommandTargetRow[]>();
  for (const t of targets) {
    const list = out.get(t.batch);
    if (list) list.push(t);
    else out.set(t.batch, [t]);
  }
  return out;
}

/**
 * One run, from its start to its stored end: the machine's state, and its effects performed.
 * `done` resolves once the run's end is written (or could not be).
 */
class RunDrive {
  readonly done: Promise<void>;
  private ended!: () => void;
  private readonly machine: Stepper<DriveState, DriveEvent>;
  private readonly batches: Map<number, CommandTargetRow[]>;
  private readonly target: TargetRunContext;
  private readonly timers: NodeJS.Timeout[];

  constructor(
    private readonly deps: StateDeps,
    private readonly clients: Clients,
    private readonly limiter: Limiter,
    private readonly input: DriveInput,
    private readonly live: Map<string, () => void>,
  ) {
    const { pool, clock, log } = deps;
    const { run } = input;
    this.done = new Promise<void>((resolve) => (this.ended = resolve));
    this.batches = byBatch(input.targets);
    this.machine = createStepper(
      initialDriveState({ id: run.id, batches: run.batches, maxFailures: run.max_failures }),
      step,
      (f) => this.perform(f),
    );
    this.target = {
      deps,
      clients,
      run,
      env: input.env,
      actor: input.actor,
      publish: runEvents(deps.nc, run.id),
      // Targets marked running together (a whole batch, when slots allow) share one statement.
      markRunning: groupCommit<number, boolean>({
        max: MAX_MARKS,
        batch: async (seqs) => {
          const ok = await commandRunsDb.markRunning(pool, run.id, seqs, clock.now());
          return seqs.map((s) => ok.has(s));
        },
        one: async (seq) => (await commandRunsDb.markRunning(pool, run.id, [seq], clock.now())).has(seq),
        log,
        what: "command target starts",
      }),
      cancelled: () => this.state.cancelled,
      sent: new Map(),
    };
    // A cancel on another replica is seen here by reading the run (state may not subscribe to run events).
    const poll = setInterval(() => {
      void commandRunsDb
        .get(pool, run.id)
        .then((r) => r?.status === "cancelling" && this.dispatch({ type: "cancel" }))
        .catch(() => {});
    }, CANCEL_POLL_MS);
    const beat = setInterval(() => void commandRunsDb.touch(pool, run.id, clock.now()).catch(() => {}), HEARTBEAT_MS);
    this.timers = [poll, beat];
    for (const t of this.timers) t.unref();
    live.set(run.id, () => this.dispatch({ type: "cancel" }));
    this.dispatch({ type: "start" });
  }

  private get state(): DriveState {
    return this.machine.state;
  }

  dispatch(event: DriveEvent): void {
    this.machine.dispatch(event);
    if (this.state.phase === "ended") this.ended();
  }

  /** Runs an I/O step; its result, or its failure, comes back as an event. */
  private later(work: Promise<DriveEvent>): void {
    void work.then(
      (e) => this.dispatch(e),
      (error: unknown) => this.dispatch({ type: "failed", error }),
    );
  }

  private perform(e: DriveEffect): void {
    if (e.type === "cancel_sent") this.cancelSent();
    else if (e.type === "log") this.deps.log[e.level](e.fields, e.message);
    else this.later(this.io(e));
  }

  /** The I/O of an effect whose result comes back as an event. */
  private io(e: Exclude<DriveEffect, { type: "cancel_sent" | "log" }>): Promise<DriveEvent> {
    const { pool, clock, log } = this.deps;
    const id = this.input.run.id;
    switch (e.type) {
      case "count_failures":
        return this.countFailures();
      case "read_run":
        return untilStored(log, "command run", () => commandRunsDb.get(pool, id)).then((r) => ({
          type: "checked",
          status: r?.status,
        }));
      case "run_batch":
        return Promise.all(
          (this.batches.get(e.batch) ?? []).map((t) => this.limiter.run(() => runTarget(this.target, t))),
        ).then((statuses) => ({ type: "batch_ended", statuses }));
      case "store_beat":
        return untilStored(log, "command run heartbeat", () => commandRunsDb.touch(pool, id, clock.now())).then(() => ({
          type: "beat_stored",
        }));
      case "finish":
        return this.finish(e.status);
    }
  }

  /** Named agents that cannot run (not_found, not_approved) count against max_failures from the start. */
  private async countFailures(): Promise<DriveEvent> {
    const id = this.input.run.id;
    const counts = await untilStored(this.deps.log, "command run counts", () =>
      commandRunsDb.counts(this.deps.pool, [id]),
    );
    const counted = counts.get(id);
    return { type: "counted", failures: COMMAND_FAILED_STATUSES.reduce((n, s) => n + (counted?.get(s) ?? 0), 0) };
  }

  /** The cancel handler told the agents already; this repeats it for jobs sent meanwhile. */
  private cancelSent(): void {
    for (const [jobId, nodeId] of this.target.sent)
      void this.clients
        .agentCommand(nodeId)
        .cancelCommand({ jobId }, { actor: this.input.actor, timeoutMs: CANCEL_TIMEOUT_MS })
        .catch(() => {});
  }

  private async finish(status: CommandRunStatus): Promise<DriveEvent> {
    const { log } = this.deps;
    const id = this.input.run.id;
    for (const t of this.timers) clearInterval(t);
    this.live.delete(id);
    await untilStored(log, "command run end", () => finishCommandRun(this.deps, id, status)).catch((err) =>
      log.error({ err, run: id }, "cannot end command run"),
    );
    return { type: "finished" };
  }
}

import { fromBinary } from "@bufbuild/protobuf";
import {
  COMMAND_FAILED_STATUSES,
  CommandOutputChunkSchema,
  commandOutputSubject,
  type CommandRunStatus,
  type CommandTargetStatus,
  type RunCommandResponse,
} from "@orch/contracts";
import { OrchError, type Actor } from "@orch/kit";
import type { Clients, StateDeps } from "../deps.js";
import { untilStored } from "../engine/db-retry.js";
import { HEARTBEAT_MS } from "../engine/fanout.js";
import type { Limiter } from "../engine/limit.js";
import { targetMsg } from "./convert.js";
import { commandRunsDb, type CommandRunRow, type CommandTargetRow, type TargetEnd } from "../db/commands.js";
import { runEvents, type RunEvents } from "./events.js";
import { finishCommandRun } from "./finish.js";

/** Added to the command's own timeout: the agent's kill grace plus the trip back. */
const ANSWER_GRACE_MS = 10_000;
/** CancelCommand is a nudge: an agent that does not answer quickly is not waited for. */
export const CANCEL_TIMEOUT_MS = 2000;
/** How often a driver re-reads its run for a cancel recorded by another replica. */
const CANCEL_POLL_MS = 1000;

/** Errors meaning the request never reached a live agent: nothing ran. */
const UNREACHABLE_REASONS = new Set(["service_unavailable", "agent_not_connected", "agent_unreachable"]);

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
 */
export function createCommandDriver(deps: StateDeps, clients: Clients, limiter: Limiter): CommandDriver {
  const { pool, clock, nc, log, config } = deps;
  const cap = config.state.command_output_cap_bytes;
  const inflight = new Map<string, Promise<void>>();
  /** The cancel trigger of each run this replica drives. */
  const live = new Map<string, () => void>();

  /** How one target's RunCommand ended, as stored. */
  function outcome(r: RunCommandResponse): Pick<TargetEnd, "status" | "error"> {
    if (r.cancelled) return { status: "cancelled", error: "" };
    if (r.timedOut) return { status: "timed_out", error: "" };
    if (r.spawnError) return { status: "failed", error: r.spawnError };
    return { status: r.exitCode === 0 ? "succeeded" : "failed", error: "" };
  }

  function failure(err: unknown, name: string): Pick<TargetEnd, "status" | "error"> {
    const e = OrchError.from(err);
    // The link dropped while the process ran: it may still be running, its result is unknown.
    if (e.reason === "agent_disconnected") return { status: "lost", error: `agent ${name} disconnected while running` };
    if (e.code === "UNAVAILABLE" || UNREACHABLE_REASONS.has(e.reason))
      return { status: "unreachable", error: `agent ${name} is not connected` };
    if (e.code === "DEADLINE_EXCEEDED") return { status: "lost", error: `agent ${name} did not answer in time` };
    return { status: "failed", error: e.message };
  }

  const clip = (b: Uint8Array) => (b.byteLength > cap ? b.subarray(0, cap) : b);

  async function drive(input: DriveInput): Promise<void> {
    const { run, env, actor } = input;
    const publish: RunEvents = runEvents(nc, run.id);
    let cancelled = false;
    /** Jobs whose RunCommand has been sent and not answered: what a cancel must reach. */
    const sent = new Map<string, string>();
    // The cancel handler told the agents already; this repeats it for jobs sent meanwhile, and the
    // flag keeps jobs still waiting for a limiter slot from being sent at all.
    const cancel = () => {
      if (cancelled) return;
      cancelled = true;
      for (const [jobId, nodeId] of sent)
        void clients
          .agentCommand(nodeId)
          .cancelCommand({ jobId }, { actor, timeoutMs: CANCEL_TIMEOUT_MS })
          .catch(() => {});
    };
    live.set(run.id, cancel);
    // A cancel on another replica is seen here by reading the run (state may not subscribe to run events).
    const poll = setInterval(() => {
      void commandRunsDb
        .get(pool, run.id)
        .then((r) => r?.status === "cancelling" && cancel())
        .catch(() => {});
    }, CANCEL_POLL_MS);
    poll.unref();

    // Targets marked running in the same tick share one statement (a whole batch, when slots allow).
    let marks: Array<{ seq: number; done: (ok: boolean) => void; fail: (e: unknown) => void }> = [];
    const markRunning = (seq: number) =>
      new Promise<boolean>((done, fail) => {
        if (marks.push({ seq, done, fail }) > 1) return;
        setImmediate(() => {
          const these = marks;
          marks = [];
          commandRunsDb
            .markRunning(
              pool,
              run.id,
              these.map((m) => m.seq),
              clock.now(),
            )
            .then(
              (ok) => {
                for (const m of these) m.done(ok.has(m.seq));
              },
              (err) => {
                for (const m of these) m.fail(err);
              },
            );
        });
      });

    async function job(t: CommandTargetRow): Promise<CommandTargetStatus> {
      const jobId = t.job_id!;
      let end: TargetEnd;
      const base = {
        exit_code: null,
        signal: "",
        duration_ms: null,
        stdout: new Uint8Array(),
        stderr: new Uint8Array(),
      };
      // Still queued when a cancel came: the cancel made it not_started already.
      if (cancelled || !(await markRunning(t.seq))) return "not_started";
      if (cancelled) {
        end = {
          ...base,
          status: "cancelled",
          error: "cancelled before it started",
          finished_at: clock.now(),
          stdout_truncated: false,
          stderr_truncated: false,
        };
      } else {
        publish.target(targetMsg({ ...t, status: "running", started_at: clock.now() }, false));
        // Subscribed before the request goes out (same connection, so the server sees it first).
        const sub = nc.subscribe(commandOutputSubject(jobId), {
          callback: (_err, msg) => {
            try {
              const c = fromBinary(CommandOutputChunkSchema, msg.data);
              publish.output({ nodeId: t.node_id, name: t.name, stream: c.stream, data: c.data, seq: c.seq });
            } catch {
              // A malformed chunk is dropped: the stored result comes from the answer.
            }
          },
        });
        sent.set(jobId, t.node_id);
        try {
          const r = await clients.agentCommand(t.node_id).runCommand(
            {
              jobId,
              runId: run.id,
              ...(run.argv ? { argv: run.argv } : { script: run.script ?? "" }),
              env,
              timeoutSeconds: run.timeout_s,
              outputCapBytes: cap,
            },
            { actor, timeoutMs: run.timeout_s * 1000 + ANSWER_GRACE_MS },
          );
          end = {
            ...outcome(r),
            exit_code: r.exitCode >= 0 ? r.exitCode : null,
            signal: r.signal,
            finished_at: clock.now(),
            duration_ms: r.durationMs,
            stdout: clip(r.stdout),
            stderr: clip(r.stderr),
            stdout_truncated: r.stdoutTruncated || r.stdout.byteLength > cap,
            stderr_truncated: r.stderrTruncated || r.stderr.byteLength > cap,
          };
        } catch (err) {
          end = {
            ...base,
            ...failure(err, t.name),
            finished_at: clock.now(),
            stdout_truncated: false,
            stderr_truncated: false,
          };
        } finally {
          sent.delete(jobId);
          sub.unsubscribe();
        }
      }
      const stored = end;
      await untilStored(log, "command target end", () => commandRunsDb.endTarget(pool, run.id, t.seq, stored));
      publish.target(targetMsg({ ...t, ...end, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) }, false));
      return end.status;
    }

    const byBatch = new Map<number, CommandTargetRow[]>();
    for (const t of input.targets) {
      const list = byBatch.get(t.batch);
      if (list) list.push(t);
      else byBatch.set(t.batch, [t]);
    }
    let status: CommandRunStatus = "completed";
    const beat = setInterval(() => void commandRunsDb.touch(pool, run.id, clock.now()).catch(() => {}), HEARTBEAT_MS);
    beat.unref();
    try {
      // Named agents that cannot run (not_found, not_approved) count against max_failures from the start.
      const counted = (await untilStored(log, "command run counts", () => commandRunsDb.counts(pool, [run.id]))).get(
        run.id,
      );
      let failures = COMMAND_FAILED_STATUSES.reduce((n, s) => n + (counted?.get(s) ?? 0), 0);
      for (let b = 1; b <= run.batches; b++) {
        if (
          cancelled ||
          (await untilStored(log, "command run", () => commandRunsDb.get(pool, run.id)))?.status !== "running"
        )
          break;
        const ended = await Promise.all((byBatch.get(b) ?? []).map((t) => limiter.run(() => job(t))));
        failures += ended.filter((s) => COMMAND_FAILED_STATUSES.includes(s)).length;
        await untilStored(log, "command run heartbeat", () => commandRunsDb.touch(pool, run.id, clock.now()));
        if (run.max_failures !== null && failures > run.max_failures && b < run.batches) {
          status = "stopped";
          log.info(
            { run: run.id, failures, max_failures: run.max_failures, batch: b },
            "command run stopped: too many failures",
          );
          break;
        }
      }
    } catch (err) {
      log.error({ err, run: run.id }, "command run failed");
      status = "interrupted";
    } finally {
      clearInterval(beat);
      clearInterval(poll);
      live.delete(run.id);
      await untilStored(log, "command run end", () => finishCommandRun(deps, run.id, status)).catch((err) =>
        log.error({ err, run: run.id }, "cannot end command run"),
      );
    }
  }

  return {
    async start(input) {
      const done = drive(input);
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

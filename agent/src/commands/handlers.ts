import { create, toBinary } from "@bufbuild/protobuf";
import {
  type AgentCommandService,
  checkCommand,
  checkCommandTimeout,
  CommandOutputChunkSchema,
  commandOutputSubject,
  type RunCommandRequest,
} from "@orch/contracts";
import { AgentError, type AgentHandlers, type AgentLogger } from "../runtime.js";
import { OUTPUT_CAP } from "../state/proc.js";
import { createChunker, type OutputChunk } from "./chunker.js";
import { createJobs, type Jobs } from "./jobs.js";
import { type Command, runCommand } from "./runner.js";

/** Kept per stream when the request names no cap; never more than OUTPUT_CAP. */
export const DEFAULT_OUTPUT_CAP = 64 * 1024;
/** setTimeout's limit (a longer delay fires at once); deadlines are at most a day and a bit away. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** A job id names a subject token. */
const JOB_ID_RE = /^[0-9A-Za-z]{1,64}$/;

export interface CommandDeps {
  log: AgentLogger;
  /** Best effort: a chunk that cannot be published is dropped (the answer carries the output). */
  publish(subject: string, data: Uint8Array): void;
  jobs?: Jobs;
}

/** The request, checked again here (the state service checked it first): what to run and the cap. */
function parse(req: RunCommandRequest): { cmd: Command; cap: number } {
  if (!JOB_ID_RE.test(req.jobId))
    throw new AgentError("INVALID_ARGUMENT", "invalid_argument", "job_id: must be 1 to 64 letters or digits (a ULID)");
  const v =
    checkCommand({ argv: req.argv, script: req.script, env: req.env }) ?? checkCommandTimeout(req.timeoutSeconds);
  if (v) throw new AgentError("INVALID_ARGUMENT", v.reason, `${v.field}: ${v.message}`);
  const cap = req.outputCapBytes > 0 ? Math.min(req.outputCapBytes, OUTPUT_CAP) : DEFAULT_OUTPUT_CAP;
  return { cmd: req.argv.length > 0 ? { argv: [...req.argv] } : { script: req.script }, cap };
}

/** Bytes of one job's output published live; beyond this only the captured (capped) answer carries it. */
export const LIVE_OUTPUT_BUDGET_BYTES = 8 * 1024 * 1024;

/**
 * AgentCommandService: one agent's job of a fleet command run. Jobs run concurrently, each with
 * its own process group; CancelCommand and the request's deadline abort them (SIGTERM, then
 * SIGKILL), so no process outlives an answer nobody waits for.
 */
export function createCommandHandlers(deps: CommandDeps): AgentHandlers<typeof AgentCommandService> {
  const jobs = deps.jobs ?? createJobs();
  const publish = (jobId: string, c: OutputChunk) => {
    try {
      const msg = create(CommandOutputChunkSchema, { jobId, stream: c.stream, data: c.data, seq: c.seq });
      deps.publish(commandOutputSubject(jobId), toBinary(CommandOutputChunkSchema, msg));
    } catch (err) {
      deps.log.debug({ err: (err as Error).message, job_id: jobId, seq: c.seq }, "output chunk not published");
    }
  };

  return {
    async runCommand(req, ctx) {
      const { cmd, cap } = parse(req);
      const ac = jobs.start(req.jobId);
      if (!ac) throw new AgentError("INVALID_ARGUMENT", "invalid_argument", `job ${req.jobId} is running already`);
      // The dispatcher answers DEADLINE_EXCEEDED then; the job must not outlive it.
      const expiry = setTimeout(() => ac.abort(), Math.min(Math.max(0, ctx.deadline - Date.now()), MAX_TIMER_MS));
      // The link has no backpressure: a runaway (`cat /dev/urandom`) would grow the gRPC write
      // buffer for its whole timeout. The live stream stops at a budget; the answer keeps its cap.
      let streamed = 0;
      const chunker = createChunker({
        emit: (c) => {
          streamed += c.data.length;
          if (streamed <= LIVE_OUTPUT_BUDGET_BYTES) publish(req.jobId, c);
        },
      });
      deps.log.info({ job_id: req.jobId, run_id: req.runId }, "command job started");
      try {
        const r = await runCommand(cmd, {
          env: req.env,
          timeoutMs: req.timeoutSeconds * 1000,
          cap,
          onOutput: (stream, b) => chunker.push(stream, b),
          signal: ac.signal,
        }).catch((err: unknown) => ({ failed: (err as Error).message }));
        chunker.end();
        if ("failed" in r) {
          deps.log.warn({ job_id: req.jobId, err: r.failed }, "command job could not start");
          return { exitCode: -1, spawnError: `could not write the script: ${r.failed}` };
        }
        const res = {
          exitCode: r.code ?? -1,
          signal: r.signal ?? "",
          timedOut: r.timedOut,
          cancelled: r.cancelled,
          spawnError: r.spawnError ?? "",
          stdout: r.stdoutBytes,
          stderr: r.stderrBytes,
          stdoutTruncated: r.stdoutTruncated,
          stderrTruncated: r.stderrTruncated,
          durationMs: r.durationMs,
        };
        deps.log.info(
          {
            job_id: req.jobId,
            exit_code: res.exitCode,
            signal: res.signal || undefined,
            timed_out: res.timedOut,
            cancelled: res.cancelled,
            duration_ms: Math.round(res.durationMs),
          },
          "command job ended",
        );
        return res;
      } finally {
        clearTimeout(expiry);
        jobs.finish(req.jobId);
      }
    },
    async cancelCommand(req) {
      const found = jobs.cancel(req.jobId);
      if (found) deps.log.info({ job_id: req.jobId }, "command job cancelled");
      return { found };
    },
  };
}

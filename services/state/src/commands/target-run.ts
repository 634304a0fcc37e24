import { fromBinary } from "@bufbuild/protobuf";
import { CommandOutputChunkSchema, commandOutputSubject, type CommandTargetStatus } from "@orch/contracts";
import type { Actor } from "@orch/kit";
import { commandRunsDb, type CommandRunRow, type CommandTargetRow, type TargetEnd } from "../db/commands.js";
import type { Clients, StateDeps } from "../deps.js";
import { untilStored } from "../engine/db-retry.js";
import { targetMsg } from "./convert.js";
import type { RunEvents } from "./events.js";
import { answeredEnd, cancelledEnd, failedEnd } from "./target-end.js";

/** Added to the command's own timeout: the agent's kill grace plus the trip back. */
const ANSWER_GRACE_MS = 10_000;

/** What every target of one run shares while the run is driven. */
export interface TargetRunContext {
  deps: StateDeps;
  clients: Clients;
  run: CommandRunRow;
  env: Record<string, string>;
  actor: Actor;
  publish: RunEvents;
  /** Queued → running (targets marked in the same turn share a statement); false: a cancel made it not_started. */
  markRunning(seq: number): Promise<boolean>;
  /** Read when the target gets its slot and again once it is marked running. */
  cancelled(): boolean;
  /** Jobs whose RunCommand has been sent and not answered (job id → node id): what a cancel must reach. */
  sent: Map<string, string>;
}

/**
 * One target of a run, once the limiter gave it a slot: marked running, its RunCommand sent with
 * its output chunks relayed to the run's subject as they come, its end stored and published.
 */
export async function runTarget(c: TargetRunContext, t: CommandTargetRow): Promise<CommandTargetStatus> {
  const { deps } = c;
  // Still queued when a cancel came: the cancel made it not_started already.
  if (c.cancelled() || !(await c.markRunning(t.seq))) return "not_started";
  const end = c.cancelled() ? cancelledEnd(deps.clock.now()) : await send(c, t);
  await untilStored(deps.log, "command target end", () => commandRunsDb.endTarget(deps.pool, c.run.id, t.seq, end));
  c.publish.target(targetMsg({ ...t, ...end, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) }, false));
  return end.status;
}

async function send(c: TargetRunContext, t: CommandTargetRow): Promise<TargetEnd> {
  const { deps, run } = c;
  const { clock, nc } = deps;
  const cap = deps.config.state.command_output_cap_bytes;
  const jobId = t.job_id!;
  c.publish.target(targetMsg({ ...t, status: "running", started_at: clock.now() }, false));
  // Subscribed before the request goes out (same connection, so the server sees it first).
  const sub = nc.subscribe(commandOutputSubject(jobId), {
    callback: (_err, msg) => {
      try {
        const chunk = fromBinary(CommandOutputChunkSchema, msg.data);
        c.publish.output({ nodeId: t.node_id, name: t.name, stream: chunk.stream, data: chunk.data, seq: chunk.seq });
      } catch {
        // A malformed chunk is dropped: the stored result comes from the answer.
      }
    },
  });
  c.sent.set(jobId, t.node_id);
  try {
    const r = await c.clients.agentCommand(t.node_id).runCommand(
      {
        jobId,
        runId: run.id,
        ...(run.argv ? { argv: run.argv } : { script: run.script ?? "" }),
        env: c.env,
        timeoutSeconds: run.timeout_s,
        outputCapBytes: cap,
      },
      { actor: c.actor, timeoutMs: run.timeout_s * 1000 + ANSWER_GRACE_MS },
    );
    return answeredEnd(r, cap, clock.now());
  } catch (err) {
    return failedEnd(err, t.name, clock.now());
  } finally {
    c.sent.delete(jobId);
    sub.unsubscribe();
  }
}

import { isUtf8 } from "node:buffer";
import { z } from "zod";
import {
  COMMAND_RUN_STATUSES,
  COMMAND_TARGET_STATUSES,
  type CommandOutput,
  type CommandRun,
  type CommandTarget,
} from "@orch/contracts";
import { iso } from "../schemas.js";

/**
 * The one place a command run becomes JSON. Output is kept as bytes end to end: valid UTF-8 is
 * shown as a string, anything else as base64 (with the encoding named), so nothing is lost or
 * mangled on the way to a client.
 */

const isoOrNull = (ms: number) => (ms > 0 ? iso(ms) : null);
const Encoding = z.enum(["utf8", "base64"]);
export type Encoding = z.infer<typeof Encoding>;

export function bytesJson(b: Uint8Array): { data: string; encoding: Encoding } {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  return isUtf8(buf)
    ? { data: buf.toString("utf8"), encoding: "utf8" }
    : { data: buf.toString("base64"), encoding: "base64" };
}

const TargetStatus = z.enum(COMMAND_TARGET_STATUSES);
const RunStatus = z.enum(COMMAND_RUN_STATUSES);

export const AgentOut = z.object({
  node_id: z.string(),
  name: z.string(),
  batch: z.number().int().describe("from 1; 0 = never launched (not_approved, not_found)"),
  status: TargetStatus,
  exit_code: z.number().int().nullable(),
  signal: z.string().nullable().describe("the signal that ended the process (SIGTERM, SIGKILL), if any"),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  duration_ms: z.number(),
  stdout: z.string().optional().describe("captured stdout (capped); absent with ?output=false"),
  stdout_encoding: Encoding.optional().describe("utf8 when the bytes are valid UTF-8, else base64"),
  stdout_truncated: z.boolean(),
  stderr: z.string().optional(),
  stderr_encoding: Encoding.optional(),
  stderr_truncated: z.boolean(),
  error: z.string().nullable().describe("why it did not run or end normally (spawn error, unreachable, lost link)"),
});
export type AgentJson = z.infer<typeof AgentOut>;

export const RunOut = z.object({
  id: z.string(),
  status: RunStatus,
  selector: z.string().nullable(),
  node_ids: z.array(z.string()).nullable(),
  command: z.array(z.string()).nullable(),
  script: z.string().nullable(),
  env_keys: z.array(z.string()).describe("names of the extra variables; values are never stored"),
  timeout_s: z.number().int(),
  batch: z.string().nullable(),
  batch_size: z.number().int(),
  batches: z.number().int(),
  max_failures: z.number().int().nullable(),
  targets: z.number().int().describe("matched or named agents (0 when a selector matched none)"),
  counts: z.record(z.string(), z.number().int()).describe("targets per status, every status listed"),
  maintenance_window: z.string().nullable().describe("a maintenance window active at start (runs are never blocked)"),
  started_by: z.object({ id: z.string(), name: z.string() }),
  cancelled_by: z.string().nullable(),
  created_at: z.string(),
  finished_at: z.string().nullable(),
  agents: z.array(AgentOut).optional().describe("per agent, in launch order (absent in lists)"),
  change_request_id: z
    .string()
    .optional()
    .describe("the approved change request (command.run) this run executes (docs/approvals.md)"),
});
export type RunJson = z.infer<typeof RunOut>;
/** A run in a list: without the per-agent results (GET the run for them). */
export const RunSummaryOut = RunOut.omit({ agents: true });

export const OutputEventOut = z.object({
  node_id: z.string(),
  name: z.string(),
  stream: z.enum(["stdout", "stderr"]),
  data: z.string(),
  encoding: Encoding,
  seq: z.number().int().describe("chunk number from 1 per agent; 0 = stored output not sent live (see docs/runs.md)"),
});
export type OutputEventJson = z.infer<typeof OutputEventOut>;

export function agentJson(t: CommandTarget, withOutput: boolean): AgentJson {
  const out = withOutput
    ? (() => {
        const so = bytesJson(t.stdout);
        const se = bytesJson(t.stderr);
        return { stdout: so.data, stdout_encoding: so.encoding, stderr: se.data, stderr_encoding: se.encoding };
      })()
    : {};
  return {
    node_id: t.nodeId,
    name: t.name,
    batch: t.batch,
    status: t.status as AgentJson["status"],
    exit_code: t.exitCode ?? null,
    signal: t.signal || null,
    started_at: isoOrNull(t.startedAt),
    finished_at: isoOrNull(t.finishedAt),
    duration_ms: t.durationMs,
    ...out,
    stdout_truncated: t.stdoutTruncated,
    stderr_truncated: t.stderrTruncated,
    error: t.error || null,
  };
}

/** `agents`: "none" in lists, "status" without output, "output" with it. */
export function runJson(r: CommandRun, agents: "none" | "status" | "output"): RunJson {
  const counts: Record<string, number> = {};
  for (const s of COMMAND_TARGET_STATUSES) counts[s] = r.counts[s] ?? 0;
  return {
    id: r.id,
    status: r.status as RunJson["status"],
    selector: r.selector || null,
    node_ids: r.selector ? null : [...r.nodeIds],
    command: r.argv.length > 0 ? [...r.argv] : null,
    script: r.argv.length > 0 ? null : r.script,
    env_keys: [...r.envKeys],
    timeout_s: r.timeoutSeconds,
    batch: r.batch || null,
    batch_size: r.batchSize,
    batches: r.batches,
    max_failures: r.maxFailures ?? null,
    targets: r.total,
    counts,
    maintenance_window: r.maintenanceWindow || null,
    started_by: { id: r.actorId, name: r.actorName },
    cancelled_by: r.cancelledBy || null,
    created_at: iso(r.createdAt),
    finished_at: isoOrNull(r.finishedAt),
    ...(agents === "none" ? {} : { agents: r.targets.map((t) => agentJson(t, agents === "output")) }),
    ...(r.changeRequestId ? { change_request_id: r.changeRequestId } : {}),
  };
}

/** The answer to a start an approval policy held: no run exists, the change request waits. */
export const HeldRunOut = z.object({
  status: z.literal("held"),
  change_request_id: z.string().describe("the pending change request (GET /api/v1/change-requests/{id})"),
  summary: z.string().describe("the request's summary, e.g. run `uptime` on 2 agents"),
  targets: z.array(z.string()).describe("names of the agents the run would start on (sorted by node id)"),
  node_ids: z.array(z.string()).describe("their node ids, in the same order"),
});
export type HeldRunJson = z.infer<typeof HeldRunOut>;

/** A held start (StartCommandRun answered with the change request it became, and no run) as JSON. */
export function heldRunJson(r: CommandRun): HeldRunJson {
  return {
    status: "held",
    change_request_id: r.changeRequestId,
    summary: r.heldSummary,
    targets: r.targets.map((t) => t.name || t.nodeId),
    node_ids: r.targets.map((t) => t.nodeId),
  };
}

export function outputJson(o: CommandOutput): OutputEventJson {
  const b = bytesJson(o.data);
  return {
    node_id: o.nodeId,
    name: o.name,
    stream: o.stream === "stderr" ? "stderr" : "stdout",
    data: b.data,
    encoding: b.encoding,
    seq: o.seq,
  };
}

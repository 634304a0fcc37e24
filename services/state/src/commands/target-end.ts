import type { RunCommandResponse } from "@orch/contracts";
import { OrchError } from "@orch/kit";
import type { TargetEnd } from "../db/commands.js";

/** Errors meaning the request never reached a live agent: nothing ran. */
const UNREACHABLE_REASONS = new Set(["service_unavailable", "agent_not_connected", "agent_unreachable"]);

type Outcome = Pick<TargetEnd, "status" | "error">;

const NOTHING = {
  exit_code: null,
  signal: "",
  duration_ms: null,
  stdout: new Uint8Array(),
  stderr: new Uint8Array(),
  stdout_truncated: false,
  stderr_truncated: false,
} as const;

/** How one target's RunCommand ended, as stored. */
export function outcome(r: RunCommandResponse): Outcome {
  if (r.cancelled) return { status: "cancelled", error: "" };
  if (r.timedOut) return { status: "timed_out", error: "" };
  if (r.spawnError) return { status: "failed", error: r.spawnError };
  return { status: r.exitCode === 0 ? "succeeded" : "failed", error: "" };
}

/** How one target's RunCommand ended when it threw instead of answering. */
export function failure(err: unknown, name: string): Outcome {
  const e = OrchError.from(err);
  // The link dropped while the process ran: it may still be running, its result is unknown.
  if (e.reason === "agent_disconnected") return { status: "lost", error: `agent ${name} disconnected while running` };
  if (e.code === "UNAVAILABLE" || UNREACHABLE_REASONS.has(e.reason))
    return { status: "unreachable", error: `agent ${name} is not connected` };
  if (e.code === "DEADLINE_EXCEEDED") return { status: "lost", error: `agent ${name} did not answer in time` };
  return { status: "failed", error: e.message };
}

/** The stored end of an answered RunCommand; output past `cap` bytes is cut and marked truncated. */
export function answeredEnd(r: RunCommandResponse, cap: number, now: number): TargetEnd {
  const clip = (b: Uint8Array) => (b.byteLength > cap ? b.subarray(0, cap) : b);
  return {
    ...outcome(r),
    exit_code: r.exitCode >= 0 ? r.exitCode : null,
    signal: r.signal,
    finished_at: now,
    duration_ms: r.durationMs,
    stdout: clip(r.stdout),
    stderr: clip(r.stderr),
    stdout_truncated: r.stdoutTruncated || r.stdout.byteLength > cap,
    stderr_truncated: r.stderrTruncated || r.stderr.byteLength > cap,
  };
}

/** The stored end of a RunCommand that threw. */
export const failedEnd = (err: unknown, name: string, now: number): TargetEnd => ({
  ...NOTHING,
  ...failure(err, name),
  finished_at: now,
});

/** A target marked running when a cancel came in between: it is never sent. */
export const cancelledEnd = (now: number): TargetEnd => ({
  ...NOTHING,
  status: "cancelled",
  error: "cancelled before it started",
  finished_at: now,
});

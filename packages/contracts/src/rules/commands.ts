import type { Violation } from "./violation.js";

/**
 * Fleet command runs (`POST /api/v1/runs`): the input limits the gateway's schema and the state
 * service both check, the statuses and the subjects. Messages never repeat the input (a command
 * line may hold a password someone typed).
 */

/** A command (argv joined) or a script, in UTF-8 bytes. */
export const COMMAND_MAX_BYTES = 64 * 1024;
export const COMMAND_MAX_ARGS = 4096;
export const COMMAND_TIMEOUT_MIN_S = 1;
export const COMMAND_TIMEOUT_MAX_S = 86_400;
export const COMMAND_TIMEOUT_DEFAULT_S = 300;
export const COMMAND_ENV_MAX = 100;
export const COMMAND_ENV_KEY_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const COMMAND_ENV_VALUE_MAX_BYTES = 32 * 1024;
/** Named agents per run (node ids or names); a selector has no limit. */
export const COMMAND_MAX_NODES = 10_000;

/** Per-agent statuses. The first two are live; every other one is final. */
export const COMMAND_TARGET_STATUSES = [
  "queued",
  "running",
  "succeeded",
  "failed",
  "timed_out",
  "cancelled",
  "unreachable",
  "lost",
  "not_approved",
  "not_found",
  "not_started",
] as const;
export type CommandTargetStatus = (typeof COMMAND_TARGET_STATUSES)[number];
/** A target that ended in one of these counts against max_failures and makes `orchctl run` exit non-zero. */
export const COMMAND_FAILED_STATUSES: readonly CommandTargetStatus[] = [
  "failed",
  "timed_out",
  "unreachable",
  "lost",
  "not_approved",
  "not_found",
];
export const commandTargetFinal = (s: string): boolean => s !== "queued" && s !== "running";

/** Run statuses: running and cancelling are live. */
export const COMMAND_RUN_STATUSES = [
  "running",
  "cancelling",
  "completed",
  "cancelled",
  "stopped",
  "interrupted",
] as const;
export type CommandRunStatus = (typeof COMMAND_RUN_STATUSES)[number];
export const commandRunFinal = (s: string): boolean => s !== "running" && s !== "cancelling";

/**
 * Subjects. An agent publishes its job's output chunks (CommandOutputChunk) on
 * `orch.state.output.<job_id>`, allowed only while that job's RunCommand is relayed to it; the
 * state service republishes them with status changes as CommandRunEvent on
 * `orch.state.commands.<run_id>` for the gateway's run streams. Two tokens below `orch.state`, so
 * no RPC subject (`orch.state.<Method>`) collides with them.
 */
export const COMMAND_OUTPUT_SUBJECTS = "orch.state.output.*";
export const commandOutputSubject = (jobId: string): string => `orch.state.output.${jobId}`;
export const COMMAND_RUN_SUBJECTS = "orch.state.commands.*";
export const commandRunSubject = (runId: string): string => `orch.state.commands.${runId}`;

type FieldViolation = Violation & { field: string };
const bad = (field: string, message: string): FieldViolation => ({ reason: "invalid_command", message, field });

/** The command part of a run request: exactly one of argv / script, sizes, env. */
export function checkCommand(c: {
  argv: readonly unknown[];
  script: string;
  env: Readonly<Record<string, unknown>>;
}): FieldViolation | null {
  const hasArgv = c.argv.length > 0;
  const hasScript = c.script !== "";
  if (hasArgv === hasScript) return bad(hasArgv ? "script" : "command", "exactly one of command or script is required");
  if (hasArgv) {
    if (c.argv.length > COMMAND_MAX_ARGS) return bad("command", `must have at most ${COMMAND_MAX_ARGS} arguments`);
    const i = c.argv.findIndex((a) => typeof a !== "string");
    if (i >= 0) return bad(`command.${i}`, "must be a string");
    if ((c.argv[0] as string) === "") return bad("command.0", "must not be empty (the program to run)");
    const j = (c.argv as string[]).findIndex((a) => a.includes("\0"));
    if (j >= 0) return bad(`command.${j}`, "must not contain NUL characters");
    const size = (c.argv as string[]).reduce((n, a) => n + Buffer.byteLength(a, "utf8") + 1, 0);
    if (size > COMMAND_MAX_BYTES) return bad("command", `must be at most ${COMMAND_MAX_BYTES} bytes in all`);
  } else if (Buffer.byteLength(c.script, "utf8") > COMMAND_MAX_BYTES) {
    return bad("script", `must be at most ${COMMAND_MAX_BYTES} bytes`);
  } else if (c.script.includes("\0")) {
    return bad("script", "must not contain NUL characters");
  }
  const keys = Object.keys(c.env);
  if (keys.length > COMMAND_ENV_MAX) return bad("env", `must have at most ${COMMAND_ENV_MAX} variables`);
  for (const k of keys) {
    if (!COMMAND_ENV_KEY_RE.test(k)) return bad(`env.${k}`, "must be an environment variable name");
    const v = c.env[k];
    if (typeof v !== "string") return bad(`env.${k}`, "must be a string");
    if (v.includes("\0")) return bad(`env.${k}`, "must not contain NUL characters");
    if (Buffer.byteLength(v, "utf8") > COMMAND_ENV_VALUE_MAX_BYTES)
      return bad(`env.${k}`, `must be at most ${COMMAND_ENV_VALUE_MAX_BYTES} bytes`);
  }
  return null;
}

export function checkCommandTimeout(s: number): FieldViolation | null {
  return Number.isInteger(s) && s >= COMMAND_TIMEOUT_MIN_S && s <= COMMAND_TIMEOUT_MAX_S
    ? null
    : {
        reason: "invalid_timeout",
        message: `must be a whole number of seconds from ${COMMAND_TIMEOUT_MIN_S} to ${COMMAND_TIMEOUT_MAX_S} (24 h)`,
        field: "timeout_s",
      };
}

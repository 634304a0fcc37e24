import { z } from "zod";
import {
  checkCommand,
  checkCommandTimeout,
  COMMAND_ENV_MAX,
  COMMAND_MAX_ARGS,
  COMMAND_MAX_BYTES,
  COMMAND_MAX_NODES,
  COMMAND_TIMEOUT_DEFAULT_S,
  COMMAND_TIMEOUT_MAX_S,
  COMMAND_TIMEOUT_MIN_S,
  type ErrorReason,
  APPROVAL_REASON_MAX,
} from "@orch/contracts";
import { invalid } from "@orch/kit";
import { batchField, maxFailuresField, Ulid } from "../schemas.js";

export const RunParams = z.object({ id: Ulid });

/**
 * The body of POST /api/v1/runs. The command part (command / script / env / timeout_s) is declared
 * loosely so the shared rules from @orch/contracts (checkCommand, checkCommandTimeout; the state
 * service checks them again for bus callers) answer `invalid_command` / `invalid_timeout` naming
 * the field; the OpenAPI document still shows the real shapes. Messages never repeat the input: a
 * command line may hold a password.
 */
export const StartRunBody = z
  .object({
    selector: z
      .string()
      .min(1)
      .max(4096)
      .optional()
      .describe("agent selector over approved agents (docs/modules.md#selectors); or node_ids"),
    node_ids: z
      .array(z.string().min(1).max(256))
      .min(1)
      .max(COMMAND_MAX_NODES)
      .optional()
      .describe("node ids or agent names; unknown ones are listed as not_found, unapproved ones as not_approved"),
    command: z
      .unknown()
      .optional()
      .meta({
        description: `argv, executed directly without a shell (at most ${COMMAND_MAX_ARGS} arguments, ${COMMAND_MAX_BYTES} bytes in all); or script`,
        type: "array",
        items: { type: "string" },
      }),
    script: z
      .unknown()
      .optional()
      .meta({
        description: `script body run by its #! interpreter, else /bin/sh (at most ${COMMAND_MAX_BYTES} bytes); or command`,
        type: "string",
      }),
    env: z
      .unknown()
      .optional()
      .meta({
        description: `extra environment (at most ${COMMAND_ENV_MAX}); the values are never stored or returned`,
        type: "object",
        additionalProperties: { type: "string" },
      }),
    timeout_s: z
      .unknown()
      .optional()
      .meta({
        description: `seconds before each agent's process group is killed (default ${COMMAND_TIMEOUT_DEFAULT_S})`,
        type: "integer",
        minimum: COMMAND_TIMEOUT_MIN_S,
        maximum: COMMAND_TIMEOUT_MAX_S,
      }),
    batch: batchField("rolling run: agents per batch, or a percentage of the targets (default: all at once)"),
    max_failures: maxFailuresField("stop launching batches once more targets than this failed"),
    reason: z
      .string()
      .max(APPROVAL_REASON_MAX)
      .optional()
      .describe("why (kept with the change request an approval policy naming command.run turns the run into)"),
    break_glass: z
      .boolean()
      .optional()
      .describe("admins: run now without the approval a policy asks for; needs `reason`, audited as critical"),
  })
  .strict();
export type StartRunBody = z.infer<typeof StartRunBody>;

export const START_RUN_ERRORS: ErrorReason[] = [
  "invalid_request",
  "invalid_command",
  "invalid_timeout",
  "invalid_selector",
  "invalid_batch",
  "break_glass_reason_required",
];

const fieldError = (
  reason: "invalid_request" | "invalid_command" | "invalid_timeout",
  field: string,
  message: string,
) => invalid(reason, `body field '${field}' ${message}`, { field, errors: [{ location: "body", field, message }] });

/** The StartCommandRun request for a body zod accepted; throws 400 naming the field otherwise. */
export function startRunRequest(body: StartRunBody) {
  if ((body.selector === undefined) === (body.node_ids === undefined))
    throw fieldError(
      "invalid_request",
      body.selector === undefined ? "selector" : "node_ids",
      "exactly one of selector or node_ids is required",
    );
  const argv = body.command ?? [];
  if (!Array.isArray(argv)) throw fieldError("invalid_command", "command", "must be an array of strings");
  const script = body.script ?? "";
  if (typeof script !== "string") throw fieldError("invalid_command", "script", "must be a string");
  const env = body.env ?? {};
  if (typeof env !== "object" || env === null || Array.isArray(env))
    throw fieldError("invalid_command", "env", "must be an object of strings");
  const bad = checkCommand({ argv, script, env: env as Record<string, unknown> });
  if (bad) throw fieldError("invalid_command", bad.field, bad.message);
  const timeout = body.timeout_s ?? COMMAND_TIMEOUT_DEFAULT_S;
  const badTimeout = typeof timeout === "number" ? checkCommandTimeout(timeout) : checkCommandTimeout(Number.NaN);
  if (badTimeout) throw fieldError("invalid_timeout", badTimeout.field, badTimeout.message);
  return {
    selector: body.selector ?? "",
    nodeIds: body.node_ids ?? [],
    argv: argv as string[],
    script,
    env: env as Record<string, string>,
    timeoutSeconds: timeout as number,
    batch: body.batch === undefined ? "" : String(body.batch),
    ...(body.max_failures !== undefined ? { maxFailures: body.max_failures } : {}),
    reason: body.reason ?? "",
    breakGlass: body.break_glass ?? false,
  };
}

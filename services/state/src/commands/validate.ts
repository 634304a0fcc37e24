import { checkCommand, checkCommandTimeout, COMMAND_MAX_NODES, type StartCommandRunRequest } from "@orch/contracts";
import { invalid } from "@orch/kit";
import { batchSize } from "../engine/fanout.js";
import { checkSelector } from "../validate.js";

/** What a start request asks for, checked; env values stay in memory only. */
export interface CommandSpec {
  selector: string | null;
  nodeIds: string[] | null;
  argv: string[] | null;
  script: string | null;
  env: Record<string, string>;
  timeoutS: number;
  batch: string;
  maxFailures: number | null;
}

type StartFields = Pick<StartCommandRunRequest, "selector" | "nodeIds" | "script" | "timeoutSeconds" | "batch"> & {
  /** unknown[]: the same check serves callers whose argv was not typed by protobuf. */
  argv: readonly unknown[];
  env: Readonly<Record<string, unknown>>;
  maxFailures?: number | undefined;
};

/** The service re-checks everything the gateway checked; each refusal names its field. */
export function checkStart(req: StartFields): CommandSpec {
  const bad = checkCommand({ argv: req.argv, script: req.script, env: req.env });
  if (bad) throw invalid(bad.reason as "invalid_command", bad.message, { field: bad.field });
  const badTimeout = checkCommandTimeout(req.timeoutSeconds);
  if (badTimeout) throw invalid("invalid_timeout", badTimeout.message, { field: badTimeout.field });

  const selector = req.selector.trim();
  if ((selector === "") === (req.nodeIds.length === 0))
    throw invalid("invalid_argument", "exactly one of selector or node_ids is required", {
      field: selector ? "node_ids" : "selector",
    });
  if (selector) checkSelector(selector);
  if (req.nodeIds.length > COMMAND_MAX_NODES)
    throw invalid("invalid_argument", `node_ids must name at most ${COMMAND_MAX_NODES} agents`, { field: "node_ids" });
  const i = req.nodeIds.findIndex((n) => n.trim() === "" || n.length > 256);
  if (i >= 0) throw invalid("invalid_argument", "must be a node id or an agent name", { field: `node_ids.${i}` });

  batchSize(req.batch, 1);
  if (req.maxFailures !== undefined && (!Number.isInteger(req.maxFailures) || req.maxFailures < 0))
    throw invalid("invalid_argument", "max_failures must be a whole number ≥ 0", { field: "max_failures" });

  const hasArgv = req.argv.length > 0;
  return {
    selector: selector || null,
    nodeIds: selector ? null : [...new Set(req.nodeIds.map((n) => n.trim()))],
    argv: hasArgv ? (req.argv as string[]) : null,
    script: hasArgv ? null : req.script,
    env: { ...(req.env as Record<string, string>) },
    timeoutS: req.timeoutSeconds,
    batch: req.batch,
    maxFailures: req.maxFailures ?? null,
  };
}

import { run, type RunOptions, type RunResult } from "../state/proc.js";
import { runScript } from "../state/script.js";

export type Command = { argv: string[] } | { script: string };

/** Runs a job's argv directly (no shell) or its script as an exec resource's script runs. */
export async function runCommand(cmd: Command, opts: RunOptions): Promise<RunResult> {
  if ("argv" in cmd) return run(cmd.argv[0]!, cmd.argv.slice(1), opts);
  return runScript(cmd.script, "orch-cmd-", opts);
}

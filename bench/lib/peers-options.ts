/** `--hosts 10,50` and `--tools orch,ansible,puppet` of the peers bench. */
import { parseArgs } from "node:util";

export const ALL_TOOLS = ["orch", "ansible", "puppet"] as const;
export type ToolName = (typeof ALL_TOOLS)[number];

export interface PeersOptions {
  hosts: number[];
  tools: ToolName[];
}

/** Throws with a usage message on anything else than the two lists. */
export function parsePeersOptions(argv: string[]): PeersOptions {
  const { values } = parseArgs({
    args: argv,
    options: { hosts: { type: "string", default: "10,50" }, tools: { type: "string", default: ALL_TOOLS.join(",") } },
  });
  const hosts = values.hosts.split(",").map((s) => Number(s.trim()));
  if (hosts.length === 0 || hosts.some((n) => !Number.isInteger(n) || n < 1 || n > 200))
    throw new Error("--hosts must be a comma-separated list of integers in 1..200");
  const tools = values.tools.split(",").map((s) => s.trim());
  const unknown = tools.filter((t) => !(ALL_TOOLS as readonly string[]).includes(t));
  if (tools.length === 0 || unknown.length > 0) throw new Error(`--tools must be a list of ${ALL_TOOLS.join(", ")}`);
  // Column order is fixed (this project first) whatever order was asked.
  return { hosts, tools: ALL_TOOLS.filter((t) => tools.includes(t)) };
}

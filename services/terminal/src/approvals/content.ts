import { contentHash } from "@orch/contracts";

export const ACTION = "terminal.open";

/** What a terminal.open change request freezes: the agent (node id and name) and the shell. */
export interface OpenContent {
  agent: { node_id: string; name: string };
  shell: string;
}

/** The frozen open and its canonical hash (the same for the gate and the executor). */
export function frozenOpen(agent: { nodeId: string; name: string }, shell: string) {
  const content: OpenContent = { agent: { node_id: agent.nodeId, name: agent.name }, shell };
  return { content, hash: contentHash(content) };
}

/** The agent and shell an approved request's content names ("" when absent or malformed). */
export function approvedOpen(content: Record<string, unknown> | undefined): { nodeId: string; shell: string } {
  const c = content ?? {};
  const agent = c.agent && typeof c.agent === "object" ? (c.agent as Record<string, unknown>) : {};
  return {
    nodeId: typeof agent.node_id === "string" ? agent.node_id : "",
    shell: typeof c.shell === "string" ? c.shell : "",
  };
}

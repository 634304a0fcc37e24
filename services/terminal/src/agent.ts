import { AgentTerminalService } from "@orch/contracts";
import { OrchError, precondition, rpcClient, type NatsConnection } from "@orch/kit";

/** The agent-side terminal service of one agent, reached through the agents service's relay. */
export const agentTerminal = (nc: NatsConnection, nodeId: string, timeoutMs: number) =>
  rpcClient(nc, "", AgentTerminalService, { timeoutMs, subjectBase: `orch.agent.${nodeId}` });

/**
 * The open's errors (docs/terminal.md#api): nobody serving the agent's subject (no link) or the link dropping is
 * "not connected"; no answer in time is a 504; the agent's own refusals (terminal_disabled,
 * shell_not_allowed, agent_not_approved from the relay) pass through with their reason.
 */
export function agentError(err: unknown): OrchError {
  const e = OrchError.from(err);
  if (e.code === "UNAVAILABLE") return precondition("agent_not_connected", "the agent is not connected");
  if (e.code === "DEADLINE_EXCEEDED")
    return new OrchError("DEADLINE_EXCEEDED", "agent_timeout", "the agent did not answer in time");
  return e;
}

import { AgentStateService, AgentsService, NotifyService, SecretsService, type Agent } from "@orch/contracts";
import { rpcClient, type Client, type NatsConnection, type ServiceDeps } from "@orch/kit";
import type { StateConfig } from "../config.js";

export type StateDeps = ServiceDeps<Readonly<StateConfig>>;

/** The other services the state service talks to, all over NATS with a timeout. */
export interface Clients {
  agents: Client<typeof AgentsService>;
  secrets: Client<typeof SecretsService>;
  notify: Client<typeof NotifyService>;
  /** AgentStateService of one agent, relayed by whichever agents replica holds its link. */
  agentState(nodeId: string): Client<typeof AgentStateService>;
}

export function createClients(nc: NatsConnection, timeoutMs: number): Clients {
  return {
    agents: rpcClient(nc, "agents", AgentsService, { timeoutMs }),
    secrets: rpcClient(nc, "secrets", SecretsService, { timeoutMs }),
    notify: rpcClient(nc, "notify", NotifyService, { timeoutMs: Math.min(timeoutMs, 2000) }),
    agentState: (nodeId) => rpcClient(nc, "", AgentStateService, { timeoutMs, subjectBase: `orch.agent.${nodeId}` }),
  };
}

/** What an operation needs to know about its agent. */
export interface AgentInfo {
  nodeId: string;
  name: string;
  status: string;
  connected: boolean;
  tags: Record<string, string>;
  attributes: Record<string, string>;
}

export const agentInfo = (a: Agent): AgentInfo => ({
  nodeId: a.nodeId,
  name: a.name,
  status: a.status,
  connected: a.connected,
  tags: { ...a.tags },
  attributes: { ...a.attributes },
});

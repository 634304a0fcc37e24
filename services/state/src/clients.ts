import {
  AgentBlobService,
  AgentCommandService,
  AgentStateService,
  AgentsService,
  ApprovalService,
  NotifyService,
  SecretsService,
} from "@orch/contracts";
import { rpcClient, type NatsConnection } from "@orch/kit";
import type { Clients } from "./deps.js";

export function createClients(nc: NatsConnection, timeoutMs: number): Clients {
  return {
    agents: rpcClient(nc, "agents", AgentsService, { timeoutMs }),
    secrets: rpcClient(nc, "secrets", SecretsService, { timeoutMs }),
    notify: rpcClient(nc, "notify", NotifyService, { timeoutMs: Math.min(timeoutMs, 2000) }),
    approvals: rpcClient(nc, "auth", ApprovalService, { timeoutMs }),
    agentState: (nodeId) => rpcClient(nc, "", AgentStateService, { timeoutMs, subjectBase: `orch.agent.${nodeId}` }),
    agentBlob: (nodeId) => rpcClient(nc, "", AgentBlobService, { timeoutMs, subjectBase: `orch.agent.${nodeId}` }),
    agentCommand: (nodeId) =>
      rpcClient(nc, "", AgentCommandService, { timeoutMs, subjectBase: `orch.agent.${nodeId}` }),
  };
}

import type {
  AgentBlobService,
  AgentCommandService,
  AgentStateService,
  AgentsService,
  ApprovalService,
  NotifyService,
  SecretsService,
} from "@orch/contracts";
import type { Client, ServiceDeps } from "@orch/kit";
import type { StateConfig } from "./config.js";

export type StateDeps = ServiceDeps<Readonly<StateConfig>>;

/** The other services the state service talks to, all over NATS with a timeout. */
export interface Clients {
  agents: Client<typeof AgentsService>;
  secrets: Client<typeof SecretsService>;
  notify: Client<typeof NotifyService>;
  /** Approval policies and change requests, held by the auth service (docs/approvals.md). */
  approvals: Client<typeof ApprovalService>;
  /** AgentStateService of one agent, relayed by whichever agents replica holds its link. */
  agentState(nodeId: string): Client<typeof AgentStateService>;
  /** AgentBlobService of one agent: blobs shipped to its cache before an apply. */
  agentBlob(nodeId: string): Client<typeof AgentBlobService>;
  /** AgentCommandService of one agent (fleet command runs), relayed the same way. */
  agentCommand(nodeId: string): Client<typeof AgentCommandService>;
}

/** What an operation needs to know about its agent. */
export interface AgentInfo {
  nodeId: string;
  name: string;
  status: string;
  connected: boolean;
  tags: Record<string, string>;
  attributes: Record<string, string>;
  /** Merged values (docs/modules.md#values), set by values/load.ts for operations that render version-2 modules. */
  values?: Readonly<Record<string, unknown>>;
}

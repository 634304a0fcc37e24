import type { AgentsService, ApprovalService } from "@orch/contracts";
import type { Client, ServiceDeps } from "@orch/kit";
import type { SecretsConfig } from "./config.js";
import type { Keyring } from "./keyring.js";

export type SecretsDeps = ServiceDeps<Readonly<SecretsConfig>>;

/** What every handler group gets: the service deps, the keyring, clients of the agents and approval services. */
export interface HandlerContext {
  deps: SecretsDeps;
  keyring: Keyring;
  agents: Pick<Client<typeof AgentsService>, "getAgent">;
  /** The auth service's approvals: secret writes a policy covers become change requests. */
  approvals: Pick<Client<typeof ApprovalService>, "evaluateApproval" | "submitChangeRequest">;
}

import type { AgentsService } from "@orch/contracts";
import type { Client, ServiceDeps } from "@orch/kit";
import type { SecretsConfig } from "./config.js";
import type { Keyring } from "./keyring.js";

export type SecretsDeps = ServiceDeps<Readonly<SecretsConfig>>;

/** What every handler group gets: the service deps, the keyring and a client of the agents service. */
export interface HandlerContext {
  deps: SecretsDeps;
  keyring: Keyring;
  agents: Pick<Client<typeof AgentsService>, "getAgent">;
}

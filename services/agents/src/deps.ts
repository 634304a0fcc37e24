import type { ServiceDeps } from "@orch/kit";
import type { AgentsConfig } from "./config.js";

export type AgentsDeps = ServiceDeps<Readonly<AgentsConfig>>;

/** What the Discover handler needs to know about the running link server. */
export interface LinkInfo {
  /** host:port announced to agents. */
  announced(): string;
}

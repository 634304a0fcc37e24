export { createAgentsService, type AgentsServiceHandle } from "./service.js";
export { agentsConfigSchema, type AgentsConfig } from "./config.js";
export type { AgentsDeps } from "./deps.js";

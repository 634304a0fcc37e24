export { createStateService } from "./service.js";
export type { StateDeps } from "./deps.js";
export { stateConfigSchema, type StateConfig } from "./config.js";
export { parseModule, MODULE_MAX_BYTES } from "./module/parse.js";

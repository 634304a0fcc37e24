export { createStateService, type StateDeps } from "./service.js";
export { stateConfigSchema, type StateConfig } from "./config.js";
export { parseModule, MODULE_MAX_BYTES } from "./module/parse.js";

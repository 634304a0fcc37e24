export { createTerminalService, type TerminalServiceHandle } from "./service.js";
export { terminalConfigSchema, type TerminalConfig } from "./config.js";

/** @orch/cli: the orchctl program and the pieces other command groups and tests reuse. */
export { buildProgram, run, reportError, commandGroups, type RegisterFn } from "./program.js";
export { action, createContext, type Context, type GlobalOptions } from "./context.js";
export {
  OrchApi,
  rawRequest,
  apiUrl,
  cliFetch,
  serverClient,
  normalizeServer,
  DEFAULT_TIMEOUT_MS,
  API_PREFIX,
} from "./http.js";
export type { ApiSettings, AuthMode, HttpMethod, Query, RawRequest, TransportOptions } from "./http.js";
export { CliError, ProblemError, SESSION_EXPIRED, type Problem } from "./errors.js";
export { Output, formatTable, type CliIO, type Writer } from "./output.js";
export {
  DEFAULT_SERVER,
  readSession,
  writeSession,
  deleteSession,
  sessionPath,
  resolveHome,
  type Session,
  type Operator,
} from "./config.js";
export { loadSigner, loadSigners, type Signer, type LoadSignerOptions } from "./keys/index.js";
export { authenticate } from "./commands/auth.js";

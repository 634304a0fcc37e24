export { createAuthService, bootstrapAdmin } from "./service.js";
export type { AuthDeps } from "./deps.js";
export { authConfigSchema, type AuthConfig } from "./config.js";

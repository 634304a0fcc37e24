export { createAuthService, bootstrapAdmin, type AuthDeps } from "./service.js";
export { authConfigSchema, type AuthConfig } from "./config.js";

export { createSecretsService } from "./service.js";
export type { SecretsDeps } from "./deps.js";
export { secretsConfigSchema, type SecretsConfig } from "./config.js";
export { parseKeyring, KeyringError, type Keyring, type Sealed } from "./keyring.js";
export { decide, normaliseRestriction, type Restriction, type AgentFacts } from "./restriction.js";

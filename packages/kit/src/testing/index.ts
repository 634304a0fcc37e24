// Test helpers (`@orch/kit/testing`): private NATS servers and databases, loggers, whole systems.
export { TEST_BUS_USER, type BusCredentials } from "./bus.js";
export { freePort, waitForPort } from "./ports.js";
export { startNats, type NatsHandle } from "./nats.js";
export { createTestDatabase, type DbHandle } from "./database.js";
export { memoryLogger, silentLogger } from "./logging.js";
export { eventually } from "./eventually.js";
export { waitFactor, waitMs, within } from "./wait.js";
export { killOnExit, onExit, type TestOwner } from "./owner.js";
export { serviceDeps } from "./deps.js";
export * from "./system.js";
export * from "./dev-ca.js";
export * from "./git.js";
export * from "./releases.js";
export * from "./private-postgres.js";
export * from "./nats-cluster.js";
export * from "./oidc-provider.js";

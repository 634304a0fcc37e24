// Input rules shared by the gateway (wrapped in its zod schemas) and the services (called directly).
export * from "./violation.js";
export * from "./ids.js";
export * from "./names.js";
export * from "./agents.js";
export * from "./secrets.js";
export * from "./discovery.js";
export * from "./commands.js";
export * from "./cron.js";
export * from "./sources.js";
export * from "./join-tokens.js";
export * from "./releases.js";
export * from "./notify.js";
export * from "./terminal.js";
export * from "./values.js";
export * from "./system.js";
export * from "./bundles.js";

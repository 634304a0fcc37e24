export { createNotifyService } from "./service.js";
export type { NotifyDeps, NotifyOptions } from "./deps.js";
export { notifyConfigSchema, type NotifyConfig } from "./config.js";

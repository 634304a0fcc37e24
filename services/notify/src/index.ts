export { createNotifyService, type NotifyDeps, type NotifyOptions } from "./service.js";
export { notifyConfigSchema, type NotifyConfig } from "./config.js";

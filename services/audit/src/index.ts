export { createAuditService, type AuditServiceHandle } from "./service.js";
export type { AuditDeps } from "./deps.js";
export { auditConfigSchema, type AuditConfig } from "./config.js";
export { AUDIT_FEED_SUBJECT } from "./feed.js";

export { createAuditService, type AuditDeps, type AuditServiceHandle } from "./service.js";
export { auditConfigSchema, type AuditConfig } from "./config.js";
export { AUDIT_FEED_SUBJECT } from "./feed.js";

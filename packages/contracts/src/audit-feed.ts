/**
 * Core-NATS subject of the audit service's live feed (AuditFeed in proto/orch/v1/audit.proto):
 * events already stored, published after each committed batch. It lies outside `audit.>` so the
 * stream does not capture it, and outside `orch.audit.*` (one token), which the gateway may publish
 * to for RPCs: only the audit service can publish here. The publisher, the gateway's live tails and
 * the AsyncAPI document all read it from here (deploy/nats/permissions.mjs spells it too).
 */
export const AUDIT_FEED_SUBJECT = "orch.audit.feed.events";

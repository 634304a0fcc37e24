import { z } from "zod";
import { int64 } from "../schemas.js";

const Ref = z.object({ id: z.string(), name: z.string(), type: z.string() });
export const AuditEventOut = z.object({
  id: z.string().describe("ULID; the last id of a page is the next cursor"),
  timestamp: z.string().describe("RFC 3339"),
  event_type: z.string(),
  severity: z.enum(["info", "warning", "error", "critical"]).or(z.string()),
  summary: z.string(),
  actor: Ref,
  target: Ref,
  metadata: z.record(z.string(), z.unknown()),
});
export const AuditPageOut = z.object({
  events: z.array(AuditEventOut),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
export const RetentionOut = z.object({
  retention_days: int64().nullable().describe("retention in force, days; null = pruning off"),
  source: z
    .enum(["override", "config"])
    .describe(
      "override = set through PUT (with retention_days null: pruning turned off); config = audit.retention_days of orch.yaml (no override, or after DELETE)",
    ),
  default_retention_days: int64().nullable().describe("audit.retention_days of orch.yaml"),
});
// Checked in the handler so a wrong type gets `invalid_retention`, not the generic `invalid_request`.
export const RetentionIn = z.object({
  retention_days: z.unknown().meta({
    type: ["integer", "null"],
    format: "int64",
    minimum: 1,
    description: "days; null = pruning off (an override)",
  }),
});

// Query values are validated by audit-query.ts rather than by zod so each failure carries its own code
// and names the parameter; the zod shapes below only document them (OpenAPI).
const param = (description: string) => z.unknown().optional().meta({ type: "string", description });
const FILTER_DOCS = {
  agent: param(
    "agent node id or name: events whose actor or target is that agent, or whose metadata names it (node_id, node_name)",
  ),
  operator: param("operator id or name (the actor)"),
  event_type: param("exact dotted event type"),
  category: param(
    "event type prefix at a dot boundary: `agent` matches agent.approved and agent.tags.updated, not agents.x",
  ),
  after: param("earliest timestamp included, RFC 3339"),
  before: param("timestamp excluded (and everything later), RFC 3339"),
};
export const FILTER_NAMES = Object.keys(FILTER_DOCS);
export const ListQuery = z.object({
  ...FILTER_DOCS,
  cursor: param("ULID: the last event id of the previous page"),
  limit: z
    .unknown()
    .optional()
    .meta({ type: "integer", format: "int32", minimum: 1, maximum: 500, default: 50, description: "page size" }),
});
export const StreamQuery = z.object({
  ...FILTER_DOCS,
  cursor: param("ULID: start after this event (the Last-Event-ID header takes precedence)"),
});
// Required, but checked in the handler so a missing value gets the same code as a bad one.
export const PruneQuery = z
  .object({ before: param("RFC 3339; events strictly earlier are deleted") })
  .meta({ required: ["before"] });

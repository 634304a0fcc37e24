import type { JsonObject } from "@bufbuild/protobuf";
import type { AuditEvent } from "@orch/contracts";
import type { z } from "zod";
import type { AuditEventOut, RetentionOut } from "./audit-schemas.js";

export function auditEventJson(e: AuditEvent): z.infer<typeof AuditEventOut> {
  const ref = (r: { id: string; name: string; type: string } | undefined) => ({
    id: r?.id ?? "",
    name: r?.name ?? "",
    type: r?.type ?? "",
  });
  return {
    id: e.id,
    timestamp: e.timestamp,
    event_type: e.eventType,
    severity: e.severity,
    summary: e.summary,
    actor: ref(e.actor),
    target: ref(e.target),
    metadata: (e.metadata ?? {}) as JsonObject,
  };
}

export function retentionJson(r: {
  retentionDays?: number;
  source: string;
  defaultRetentionDays?: number;
}): z.infer<typeof RetentionOut> {
  return {
    retention_days: r.retentionDays ?? null,
    source: r.source === "override" ? "override" : "config",
    default_retention_days: r.defaultRetentionDays ?? null,
  };
}

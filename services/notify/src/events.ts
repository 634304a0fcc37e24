import type { AuditEvent } from "@orch/contracts";

/** An audit event as JSON: the shape of GET /api/v1/audit, stored with each delivery and sent to webhooks. */
export interface EventJson {
  id: string;
  timestamp: string;
  event_type: string;
  severity: string;
  summary: string;
  actor: { id: string; name: string; type: string };
  target: { id: string; name: string; type: string };
  metadata: Record<string, unknown>;
}

const ref = (r: { id: string; name: string; type: string } | undefined) => ({
  id: r?.id ?? "",
  name: r?.name ?? "",
  type: r?.type ?? "",
});

export function eventJson(ev: AuditEvent): EventJson {
  return {
    id: ev.id,
    timestamp: ev.timestamp,
    event_type: ev.eventType,
    severity: ev.severity,
    summary: ev.summary,
    actor: ref(ev.actor),
    target: ref(ev.target),
    metadata: (ev.metadata ?? {}) as Record<string, unknown>,
  };
}

export function eventTimeMs(ev: EventJson, fallback: number): number {
  const t = Date.parse(ev.timestamp);
  return Number.isFinite(t) ? t : fallback;
}

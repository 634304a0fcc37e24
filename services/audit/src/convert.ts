import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { AuditEventSchema, type AuditEvent, type StoredEvent, StoredEventSchema } from "@orch/contracts";
import type { EventRow } from "./db/events.js";
import type { DecodedEvent } from "./decode.js";
import { ID_TIME_SKEW_MS, ulidTime } from "./ulid-time.js";

// Postgres text and jsonb cannot hold NUL; an event carrying one must still be stored.
const clean = (s: string) => (s.includes("\u0000") ? s.replaceAll("\u0000", "\uFFFD") : s);

function cleanJson(v: JsonValue): JsonValue {
  if (typeof v === "string") return clean(v);
  if (Array.isArray(v)) return v.map(cleanJson);
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [clean(k), cleanJson(x as JsonValue)]));
  return v;
}

/** Maps a bus event to its row; `skewed` flags an id time far from the timestamp. */
export function toRow(ev: DecodedEvent): { row: EventRow; skewed: boolean } {
  const parsed = Date.parse(ev.timestamp);
  const idTime = ulidTime(ev.id);
  const ts = Number.isFinite(parsed) ? parsed : idTime;
  return {
    row: {
      id: ev.id,
      ts,
      event_type: clean(ev.eventType),
      severity: clean(ev.severity),
      summary: clean(ev.summary),
      actor_id: clean(ev.actor?.id ?? ""),
      actor_name: clean(ev.actor?.name ?? ""),
      actor_type: clean(ev.actor?.type ?? ""),
      target_id: clean(ev.target?.id ?? ""),
      target_name: clean(ev.target?.name ?? ""),
      target_type: clean(ev.target?.type ?? ""),
      metadata: cleanJson(ev.metadata ?? {}) as JsonObject,
    },
    skewed: Math.abs(idTime - ts) > ID_TIME_SKEW_MS,
  };
}

export function toEvent(r: EventRow): AuditEvent {
  return create(AuditEventSchema, {
    id: r.id,
    timestamp: new Date(Number(r.ts)).toISOString(),
    eventType: r.event_type,
    severity: r.severity,
    summary: r.summary,
    actor: { id: r.actor_id, name: r.actor_name, type: r.actor_type },
    target: { id: r.target_id, name: r.target_name, type: r.target_type },
    metadata: r.metadata ?? {},
  });
}

export const storedEvent = (r: EventRow & { seq: number }): StoredEvent =>
  create(StoredEventSchema, { event: toEvent(r), seq: r.seq });

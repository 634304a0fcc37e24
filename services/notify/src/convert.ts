import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import type { ChannelSchema, DeliverySchema, MaintenanceWindowSchema, NotificationSchema } from "@orch/contracts";
import { viewConfig } from "./channels/config.js";
import type { CredentialBox } from "./channels/crypto.js";
import type { ChannelRow } from "./db/channels.js";
import type { DeliveryRow } from "./db/deliveries.js";
import type { NotificationRow } from "./db/notifications.js";
import type { WindowRow } from "./db/windows.js";

export function toChannel(
  r: ChannelRow,
  box: CredentialBox,
  generatedSecret?: string,
): MessageInitShape<typeof ChannelSchema> {
  let creds: Record<string, unknown>;
  try {
    creds = box.open(r.id, r.credentials);
  } catch {
    creds = {}; // unreadable (key missing): shown without credentials rather than failing the listing
  }
  return {
    id: r.id,
    name: r.name,
    channelType: r.channel_type,
    config: viewConfig(r.channel_type, r.config, creds, generatedSecret) as JsonObject,
    createdAt: Number(r.created_at),
    createdBy: r.created_by,
    enabled: r.enabled,
    disabledReason: r.disabled_reason,
    updatedAt: Number(r.updated_at),
  };
}

export function toWindow(w: WindowRow): MessageInitShape<typeof MaintenanceWindowSchema> {
  return {
    id: w.id,
    startsAt: Number(w.starts_at),
    endsAt: Number(w.ends_at),
    reason: w.reason,
    createdBy: w.created_by,
    createdAt: Number(w.created_at),
    updatedAt: Number(w.updated_at),
  };
}

export function toNotification(n: NotificationRow): MessageInitShape<typeof NotificationSchema> {
  return {
    id: n.id,
    eventId: n.event_id,
    eventType: n.event_type,
    severity: n.severity,
    summary: n.summary,
    timestampMs: Number(n.timestamp_ms),
    read: n.read_at !== null,
  };
}

export function toDelivery(d: DeliveryRow): MessageInitShape<typeof DeliverySchema> {
  return {
    id: d.id,
    channelId: d.channel_id,
    eventId: d.event_id,
    eventType: d.event_type,
    severity: d.severity,
    status: d.status,
    attempts: d.attempts,
    nextAttemptAt: d.status === "pending" ? Number(d.next_attempt_at) : 0,
    lastStatusCode: d.last_status_code,
    lastError: d.last_error,
    createdAt: Number(d.created_at),
    deliveredAt: Number(d.delivered_at),
  };
}

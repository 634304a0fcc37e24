import { z } from "zod";
import { int64 } from "../schemas.js";
import type { Channel, Delivery } from "@orch/contracts";

const sec = (ms: number) => Math.floor(ms / 1000);

export const ChannelOut = z.object({
  id: z.string(),
  name: z.string(),
  channel_type: z.enum(["webhook", "discord", "slack", "ntfy"]),
  config: z
    .record(z.string(), z.unknown())
    .describe("type-specific; credentials masked (a generated webhook secret is shown once, on create)"),
  enabled: z.boolean(),
  disabled_reason: z.string().nullable(),
  created_at: int64().describe("Unix seconds, UTC"),
  created_by: z.string(),
  updated_at: int64().describe("Unix seconds, UTC"),
});

export function channelJson(c: Channel): z.infer<typeof ChannelOut> {
  return {
    id: c.id,
    name: c.name,
    channel_type: c.channelType as z.infer<typeof ChannelOut>["channel_type"],
    config: (c.config ?? {}) as Record<string, unknown>,
    enabled: c.enabled,
    disabled_reason: c.disabledReason || null,
    created_at: sec(c.createdAt),
    created_by: c.createdBy,
    updated_at: sec(c.updatedAt),
  };
}

export const DeliveryOut = z.object({
  id: z.string(),
  channel_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  severity: z.string(),
  status: z.enum(["pending", "in_flight", "delivered", "failed", "suppressed", "cancelled"]),
  attempts: z.number().int(),
  next_attempt_at_ms: int64().nullable().describe("Unix milliseconds, UTC"),
  last_status_code: z.number().int().nullable(),
  last_error: z.string().nullable(),
  created_at_ms: int64().describe("Unix milliseconds, UTC"),
  delivered_at_ms: int64().nullable().describe("Unix milliseconds, UTC"),
});

export function deliveryJson(d: Delivery): z.infer<typeof DeliveryOut> {
  return {
    id: d.id,
    channel_id: d.channelId,
    event_id: d.eventId,
    event_type: d.eventType,
    severity: d.severity,
    status: d.status as z.infer<typeof DeliveryOut>["status"],
    attempts: d.attempts,
    next_attempt_at_ms: d.nextAttemptAt || null,
    last_status_code: d.lastStatusCode || null,
    last_error: d.lastError || null,
    created_at_ms: d.createdAt,
    delivered_at_ms: d.deliveredAt || null,
  };
}
export const TestOut = z.object({
  delivered: z.boolean(),
  status_code: z.number().int().nullable(),
  response_snippet: z.string().nullable().describe("first 200 characters of the receiver's answer"),
  error: z.string().nullable(),
});

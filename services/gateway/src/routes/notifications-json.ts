import { z } from "zod";
import { int64 } from "../schemas.js";
import type { Notification } from "@orch/contracts";

export const NotificationOut = z.object({
  id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  severity: z.string(),
  summary: z.string(),
  timestamp_ms: int64().describe("Unix milliseconds, UTC (the audit event's time)"),
  read: z.boolean(),
});

export function notificationJson(n: Notification): z.infer<typeof NotificationOut> {
  return {
    id: n.id,
    event_id: n.eventId,
    event_type: n.eventType,
    severity: n.severity,
    summary: n.summary,
    timestamp_ms: n.timestampMs,
    read: n.read,
  };
}

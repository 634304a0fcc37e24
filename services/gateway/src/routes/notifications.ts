import { z } from "zod";
import { NotifyService, type Notification } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../app.js";
import { route } from "../route.js";
import { qBool, qInt } from "../schemas.js";

const NotificationOut = z.object({
  id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  severity: z.string(),
  summary: z.string(),
  timestamp_ms: z.number().int(),
  read: z.boolean(),
});

function notificationJson(n: Notification): z.infer<typeof NotificationOut> {
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

/** Every route here acts on the calling operator's own notifications only. */
export function notificationRoutes(ctx: GatewayContext) {
  const notify = rpcClient(ctx.nc, "notify", NotifyService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "GET",
      path: "/api/v1/notifications",
      auth: "operator",
      summary: "List the calling operator's notifications, newest first",
      tags: ["notifications"],
      query: z.object({
        unread: qBool.optional(),
        limit: qInt(1, 200).optional().describe("default 50, max 200"),
        cursor: z.string().max(200).optional(),
      }),
      responses: {
        200: z.object({
          notifications: z.array(NotificationOut),
          unread_count: z.number().int(),
          has_more: z.boolean(),
          next_cursor: z.string().nullable(),
        }),
      },
      async handler({ query, call }) {
        const r = await notify.listNotifications(
          { unreadOnly: query.unread ?? false, limit: query.limit ?? 0, cursor: query.cursor ?? "" },
          call,
        );
        return {
          notifications: r.notifications.map(notificationJson),
          unread_count: r.unreadCount,
          has_more: r.nextCursor !== "",
          next_cursor: r.nextCursor || null,
        };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/notifications/read-all",
      auth: "operator",
      summary: "Mark all of the calling operator's notifications read",
      tags: ["notifications"],
      responses: { 200: z.object({ marked: z.number().int(), unread_count: z.number().int() }) },
      async handler({ call }) {
        const r = await notify.markAllRead({}, call);
        return { marked: r.marked, unread_count: r.unreadCount };
      },
    }),
    route({
      method: "POST",
      path: "/api/v1/notifications/{id}/read",
      auth: "operator",
      summary: "Mark one of the calling operator's notifications read",
      tags: ["notifications"],
      params: z.object({ id: z.string().min(1).max(128) }),
      responses: { 200: z.object({ notification: NotificationOut, unread_count: z.number().int() }) },
      errors: { 404: ["notification_not_found"] },
      async handler({ params, call }) {
        const r = await notify.markRead({ id: params.id }, call);
        return { notification: notificationJson(r.notification!), unread_count: r.unreadCount };
      },
    }),
  ];
}

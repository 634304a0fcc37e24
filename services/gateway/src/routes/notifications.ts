import { z } from "zod";
import { NotifyService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import type { GatewayContext } from "../context.js";
import { route } from "../route.js";
import { int64, qBool, qInt } from "../schemas.js";
import { NotificationOut, notificationJson } from "./notifications-json.js";

/** Every route here acts on the calling operator's own notifications only. */
export function notificationRoutes(ctx: GatewayContext) {
  const notify = rpcClient(ctx.nc, "notify", NotifyService, { timeoutMs: ctx.timeoutMs });
  return [
    route({
      method: "GET",
      path: "/api/v1/notifications",
      auth: "operator",
      summary: "List the calling operator's notifications, newest first",
      description:
        "An envelope: `notifications` (a page), `unread_count` (all the operator's unread ones, not just this page's), `has_more` and `next_cursor` (pass it back as `cursor`).",
      tags: ["notifications"],
      query: z.object({
        unread: qBool
          .optional()
          .describe("true: only the notifications the calling operator has not read yet (default false)"),
        limit: qInt(1, 200).optional().describe("default 50, max 200"),
        cursor: z.string().max(200).optional(),
      }),
      responses: {
        200: z.object({
          notifications: z.array(NotificationOut),
          unread_count: int64(),
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
      responses: { 200: z.object({ marked: z.number().int(), unread_count: int64() }) },
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
      responses: { 200: z.object({ notification: NotificationOut, unread_count: int64() }) },
      errors: { 404: ["notification_not_found"] },
      async handler({ params, call }) {
        const r = await notify.markRead({ id: params.id }, call);
        return { notification: notificationJson(r.notification!), unread_count: r.unreadCount };
      },
    }),
  ];
}

import { count, type NotifyService } from "@orch/contracts";
import { keysetPage, invalid, notFound, pageCursor, pageLimit, type Handlers } from "@orch/kit";
import { notificationsDb } from "../db/notifications.js";
import { toNotification } from "../convert.js";
import { requireOperator } from "./access.js";
import type { NotifyRuntime } from "../deps.js";

type NotificationHandlers = Pick<Handlers<typeof NotifyService>, "listNotifications" | "markRead" | "markAllRead">;

export const NOTIFICATIONS_MAX_LIMIT = 200;

/** Everything here is scoped to the calling operator (ctx.actor): nobody reads or marks another's notifications. */
export function notificationHandlers(rt: NotifyRuntime): NotificationHandlers {
  const { pool, events, clock } = rt.deps;
  return {
    async listNotifications(req, ctx) {
      const me = requireOperator(ctx);
      const limit = pageLimit(req.limit, 50, NOTIFICATIONS_MAX_LIMIT);
      const rows = await notificationsDb.page(pool, me, {
        unreadOnly: req.unreadOnly,
        limit: limit + 1,
        before: pageCursor(req.cursor, "ulid"),
      });
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      return {
        notifications: page.map(toNotification),
        unreadCount: await notificationsDb.unreadCount(pool, me),
        nextCursor,
      };
    },

    async markRead(req, ctx) {
      const me = requireOperator(ctx);
      if (!req.id) throw invalid("invalid_request", "id is required", { field: "id" });
      return events.tx(async (db, emit) => {
        // Another operator's id is indistinguishable from an unknown one.
        const n = await notificationsDb.byId(db, me, req.id);
        if (!n) throw notFound("notification_not_found", `no notification '${req.id}'`);
        if (await notificationsDb.markRead(db, me, n.id, clock.now())) {
          n.read_at = clock.now();
          await emit({
            type: "notification.read",
            summary: `${ctx.actor.name} read the ${n.event_type} notification`,
            actor: ctx.actor,
            target: { id: n.id, name: n.event_type, type: "notification" },
            metadata: { count: 1, event_id: n.event_id },
          });
        }
        return { notification: toNotification(n), unreadCount: await notificationsDb.unreadCount(db, me) };
      });
    },

    async markAllRead(_req, ctx) {
      const me = requireOperator(ctx);
      return events.tx(async (db, emit) => {
        const marked = await notificationsDb.markAllRead(db, me, clock.now());
        if (marked > 0) {
          await emit({
            type: "notification.read",
            summary: `${ctx.actor.name} marked ${count(marked, "notification")} read`,
            actor: ctx.actor,
            target: { id: me, name: ctx.actor.name, type: "operator" },
            metadata: { count: marked, all: true },
          });
        }
        return { marked, unreadCount: await notificationsDb.unreadCount(db, me) };
      });
    },
  };
}

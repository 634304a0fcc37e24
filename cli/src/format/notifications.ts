/** An operator's notifications as table rows and the unread-count note (pure). */
import type { NotificationPage } from "@orch/client";

/** The first, unnamed column marks unread notifications with `*`. */
export const NOTIFICATION_COLUMNS = ["", "ID", "TIME", "SEVERITY", "TYPE", "SUMMARY"];

export function notificationRows(notifications: NotificationPage["notifications"]): unknown[][] {
  return notifications.map((x) => [
    x.read ? " " : "*",
    x.id,
    new Date(x.timestamp_ms).toISOString(),
    x.severity,
    x.event_type,
    x.summary,
  ]);
}

/** "3 unread", plus how to fetch the next page when there is one. */
export const unreadNote = (page: NotificationPage) =>
  `${page.unread_count} unread${page.has_more && page.next_cursor ? `; more: --cursor ${page.next_cursor}` : ""}`;

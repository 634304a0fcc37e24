import t from "tap";
import type { NotificationPage } from "@orch/client";
import { NOTIFICATION_COLUMNS, notificationRows, unreadNote } from "../src/format/notifications.js";
import { formatTable } from "../src/output.js";

const page = {
  notifications: [
    {
      id: "n-1",
      read: false,
      timestamp_ms: 1_748_779_200_000,
      severity: "error",
      event_type: "state.apply.failed",
      summary: "apply of nginx failed on web-1: file /etc/nginx/nginx.conf: permission denied",
    },
    {
      id: "n-2",
      read: true,
      timestamp_ms: 1_748_779_260_000,
      severity: "warning",
      event_type: "agent.offline",
      summary: "web-2 went offline",
    },
  ],
  unread_count: 1,
  has_more: true,
  next_cursor: "n-2",
} as NotificationPage;

t.test("unit: notifications table marks unread ones with *", async (t) => {
  t.equal(
    formatTable(NOTIFICATION_COLUMNS, notificationRows(page.notifications)),
    [
      "   ID   TIME                      SEVERITY  TYPE                SUMMARY",
      "*  n-1  2025-06-01T12:00:00.000Z  error     state.apply.failed  apply of nginx failed on web-1: file /etc/nginx/nginx.conf: permission denied",
      "   n-2  2025-06-01T12:01:00.000Z  warning   agent.offline       web-2 went offline",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(NOTIFICATION_COLUMNS, notificationRows([])), "  ID  TIME  SEVERITY  TYPE  SUMMARY\n");
});

t.test("unit: the unread note adds the next cursor only when there is more", async (t) => {
  t.equal(unreadNote(page), "1 unread; more: --cursor n-2");
  t.equal(unreadNote({ ...page, has_more: false, next_cursor: null }), "1 unread");
});

/** The operator's notifications, newest first: mark one or all read (the shell's badge follows). */
import { type Notification, useMarkAllRead, useMarkRead, useNotifications, useUnreadCount } from "../api/notifications";
import { Badge, EmptyState, toneOf } from "../ui/banner";
import { QueryStatus } from "../ui/loading";
import { Page } from "../ui/page";
import { ProblemMessage } from "../ui/problem";
import { Time } from "../ui/time";

function NotificationRow({ n }: { n: Notification }) {
  const markRead = useMarkRead();
  return (
    <li className={n.read ? "read" : "unread"}>
      <div className="list-main">
        <div className="list-summary">{n.summary}</div>
        <div className="meta">
          <Badge tone={toneOf(n.severity)}>{n.severity}</Badge>
          <span className="mono">{n.event_type}</span>
          <Time value={n.timestamp_ms} />
          <span>{n.read ? "Read" : "Unread"}</span>
        </div>
        <ProblemMessage error={markRead.error} />
      </div>
      {n.read ? null : (
        <button type="button" className="btn" disabled={markRead.isPending} onClick={() => markRead.mutate(n.id)}>
          Mark read
        </button>
      )}
    </li>
  );
}

export default function InboxPage() {
  const list = useNotifications();
  const unread = useUnreadCount();
  const markAll = useMarkAllRead();
  const items = list.data?.pages.flatMap((p) => p.notifications) ?? [];
  return (
    <Page
      title="Inbox"
      actions={
        <button
          type="button"
          className="btn"
          disabled={markAll.isPending || unread.data === 0}
          onClick={() => markAll.mutate()}
        >
          Mark all read
        </button>
      }
    >
      <ProblemMessage error={markAll.error} />
      <QueryStatus query={list}>
        {items.length ? (
          <>
            <ul className="list" aria-label="Notifications">
              {items.map((n) => (
                <NotificationRow key={n.id} n={n} />
              ))}
            </ul>
            {list.hasNextPage ? (
              <div className="toolbar">
                <button
                  type="button"
                  className="btn"
                  disabled={list.isFetchingNextPage}
                  onClick={() => void list.fetchNextPage()}
                >
                  {list.isFetchingNextPage ? "Loading…" : "Load more"}
                </button>
              </div>
            ) : null}
          </>
        ) : (
          <EmptyState title="No notifications">Alerts for you (drift, agents going away, …) appear here.</EmptyState>
        )}
      </QueryStatus>
    </Page>
  );
}

/**
 * The operator's inbox. The shell's badge and the Inbox page share the ["notifications"] prefix, so a
 * mark-read anywhere refreshes both.
 */
import type { NotificationPage } from "@orch/client";
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";

export type { Notification, NotificationPage } from "@orch/client";

const NOTIFICATIONS_KEY = ["notifications"] as const;
const UNREAD_KEY = [...NOTIFICATIONS_KEY, "unread"] as const;
const LIST_KEY = [...NOTIFICATIONS_KEY, "list"] as const;

/** Unread count for the badge: refreshed every 15 s, on window focus and after any mark-read. */
export function useUnreadCount() {
  return useQuery({
    queryKey: UNREAD_KEY,
    queryFn: async (): Promise<number> => {
      const page = unwrap(await api.GET("/api/v1/notifications", { params: { query: { unread: true, limit: 1 } } }));
      return page.unread_count;
    },
    refetchInterval: 15_000,
    refetchOnWindowFocus: true,
  });
}

/** Newest first, one page at a time ("Load more" follows the cursor). */
export function useNotifications(pageSize = 50) {
  return useInfiniteQuery({
    queryKey: [...LIST_KEY, pageSize],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }): Promise<NotificationPage> =>
      unwrap(
        await api.GET("/api/v1/notifications", {
          params: { query: { limit: pageSize, ...(pageParam ? { cursor: pageParam } : {}) } },
        }),
      ),
    getNextPageParam: (last) => (last.has_more && last.next_cursor ? last.next_cursor : undefined),
  });
}

export function useMarkRead() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async (id: string) =>
      unwrap(await api.POST("/api/v1/notifications/{id}/read", { params: { path: { id } } })),
    onSettled: () => queryClient.invalidateQueries({ queryKey: NOTIFICATIONS_KEY }),
  });
}

export function useMarkAllRead() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: async () => unwrap(await api.POST("/api/v1/notifications/read-all")),
    onSettled: () => queryClient.invalidateQueries({ queryKey: NOTIFICATIONS_KEY }),
  });
}

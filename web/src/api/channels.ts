/**
 * Notification channels: everyone reads them (credentials come back masked); creating, editing,
 * testing and deleting are admin routes. Query keys start with "channels".
 */
import type { Channel, ChannelPage, ChannelTest, DeliveryPage, RequestBody } from "@orch/client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";

export type { Channel, ChannelPage, ChannelTest, DeliveryPage };
export type ChannelType = Channel["channel_type"];
export type Delivery = DeliveryPage["deliveries"][number];
export type DeliveryStatus = Delivery["status"];
export type NewChannel = RequestBody<"/api/v1/channels", "post">;
export type ChannelUpdate = RequestBody<"/api/v1/channels/{id}", "put">;

export const CHANNELS_PAGE_SIZE = 100;
export const DELIVERIES_PAGE_SIZE = 50;

export const channelKeys = {
  all: ["channels"] as const,
  list: (cursor: string | undefined) => ["channels", "list", { cursor }] as const,
  detail: (id: string) => ["channels", "detail", id] as const,
  deliveries: (id: string, status: string, cursor: string | undefined) =>
    ["channels", "detail", id, "deliveries", { status, cursor }] as const,
};

export function useChannels(cursor: string | undefined) {
  return useQuery({
    queryKey: channelKeys.list(cursor),
    queryFn: async (): Promise<ChannelPage> =>
      unwrap(
        await api.GET("/api/v1/channels", {
          params: { query: { limit: CHANNELS_PAGE_SIZE, ...(cursor ? { cursor } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

export function useChannel(id: string) {
  return useQuery({
    queryKey: channelKeys.detail(id),
    queryFn: async (): Promise<Channel> => unwrap(await api.GET("/api/v1/channels/{id}", { params: { path: { id } } })),
  });
}

/** A channel's deliveries, newest first; refreshed every 10 s while shown (retries move on their own). */
export function useDeliveries(id: string, status: DeliveryStatus | "", cursor: string | undefined) {
  return useQuery({
    queryKey: channelKeys.deliveries(id, status, cursor),
    queryFn: async (): Promise<DeliveryPage> =>
      unwrap(
        await api.GET("/api/v1/channels/{id}/deliveries", {
          params: {
            path: { id },
            query: {
              limit: DELIVERIES_PAGE_SIZE,
              ...(status ? { status } : {}),
              ...(cursor ? { cursor } : {}),
            },
          },
        }),
      ),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
}

export function useCreateChannel() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: NewChannel): Promise<Channel> => unwrap(await api.POST("/api/v1/channels", { body })),
    onSuccess: () => qc.invalidateQueries({ queryKey: channelKeys.all }),
  });
}

export function useUpdateChannel(id: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: ChannelUpdate): Promise<Channel> =>
      unwrap(await api.PUT("/api/v1/channels/{id}", { params: { path: { id } }, body })),
    onSuccess: (channel) => {
      qc.setQueryData(channelKeys.detail(id), channel);
      return qc.invalidateQueries({ queryKey: channelKeys.all });
    },
  });
}

export function useDeleteChannel() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (id: string) => unwrap(await api.DELETE("/api/v1/channels/{id}", { params: { path: { id } } })),
    onSuccess: (_r, id) => {
      qc.removeQueries({ queryKey: channelKeys.detail(id) });
      return qc.invalidateQueries({ queryKey: channelKeys.all });
    },
  });
}

/** Sends a test notification now; the answer says what the receiver said (or why nothing was sent). */
export function useTestChannel(id: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (): Promise<ChannelTest> =>
      unwrap(await api.POST("/api/v1/channels/{id}/test", { params: { path: { id } } })),
    onSettled: () => qc.invalidateQueries({ queryKey: [...channelKeys.detail(id), "deliveries"] }),
  });
}

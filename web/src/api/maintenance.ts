/**
 * Maintenance windows (times are Unix seconds). Everyone reads them; creating and ending are admin
 * routes. The shell's banner asks for the list every 30 s (and on window focus): the API has no
 * "active only" filter, so the answer is filtered here.
 */
import { followPages, type MaintenanceWindow, type MaintenanceWindowPage, type RequestBody } from "@orch/client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { isActiveAt } from "../lib/window-times";
import { api, unwrap } from "./client";

export type { MaintenanceWindow, MaintenanceWindowPage };
export type NewWindow = RequestBody<"/api/v1/maintenance-windows", "post">;

export const WINDOWS_PAGE_SIZE = 100;
export const BANNER_POLL_MS = 30_000;
const KEY = ["maintenance-windows"] as const;

export function useWindows(cursor: string | undefined) {
  return useQuery({
    queryKey: [...KEY, "page", { cursor }],
    queryFn: async (): Promise<MaintenanceWindowPage> =>
      unwrap(
        await api.GET("/api/v1/maintenance-windows", {
          params: { query: { limit: WINDOWS_PAGE_SIZE, ...(cursor ? { cursor } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

/** The windows active now (for the banner on every page). */
export function useActiveWindows() {
  return useQuery({
    queryKey: [...KEY, "active"],
    queryFn: async ({ signal }): Promise<MaintenanceWindow[]> => {
      const page = async (cursor: string | undefined) =>
        unwrap(
          await api.GET("/api/v1/maintenance-windows", {
            params: { query: { limit: 500, ...(cursor ? { cursor } : {}) } },
            signal,
          }),
        );
      const active: MaintenanceWindow[] = [];
      const now = Date.now();
      await followPages(await page(undefined), page, (p) =>
        active.push(...p.windows.filter((w) => isActiveAt(w, now))),
      );
      return active;
    },
    staleTime: BANNER_POLL_MS,
    refetchInterval: BANNER_POLL_MS,
    refetchOnWindowFocus: true,
    // The banner is an aside: a failure shows on the page that needs it, not as a retry storm here.
    retry: false,
  });
}

export function useCreateWindow() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: NewWindow): Promise<MaintenanceWindow> =>
      unwrap(await api.POST("/api/v1/maintenance-windows", { body })),
    onSuccess: () => qc.invalidateQueries({ queryKey: KEY }),
  });
}

/** Ends a window now: ends_at = now (kept in the list as history, unlike DELETE). */
export function useEndWindow() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (w: MaintenanceWindow): Promise<MaintenanceWindow> => {
      // ends_at must stay after starts_at: a window that started this very second ends one second on.
      const endsAt = Math.max(Math.floor(Date.now() / 1000), w.starts_at + 1);
      return unwrap(
        await api.PUT("/api/v1/maintenance-windows/{id}", {
          params: { path: { id: w.id } },
          body: { ends_at: endsAt },
        }),
      );
    },
    onSuccess: () => qc.invalidateQueries({ queryKey: KEY }),
  });
}

export function useDeleteWindow() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (id: string) =>
      unwrap(await api.DELETE("/api/v1/maintenance-windows/{id}", { params: { path: { id } } })),
    onSettled: () => qc.invalidateQueries({ queryKey: KEY }),
  });
}

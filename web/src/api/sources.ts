/**
 * Git sources: list, one, and "Sync now". A source is created from the CLI (its credentials and
 * webhook secret never pass through a browser), so the console only reads and triggers syncs.
 * A sync changes modules and assignments too, so it invalidates those views as well.
 */
import { followPages, type ResponseBody } from "@orch/client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { assignmentKeys } from "./assignments";
import { api, unwrap } from "./client";
import { moduleKeys } from "./modules";

export type Source = ResponseBody<"/api/v1/sources/{name}", "get">;
export type SourcePage = ResponseBody<"/api/v1/sources", "get">;
export type SourceFileError = Source["errors"][number];

export const sourceKeys = {
  all: ["sources"] as const,
  list: () => ["sources", "list"] as const,
  detail: (name: string) => ["sources", "detail", name] as const,
};

const PAGE = 500;
/** While a source has never synced (its first sync runs on the next tick), look again this often. */
const PENDING_POLL_MS = 2000;

const anyPending = (sources: readonly Source[] | undefined) => (sources ?? []).some((s) => s.status === "pending");

/** Every source, all pages (one per repository: a short list). */
export function useSources() {
  return useQuery({
    queryKey: sourceKeys.list(),
    queryFn: async ({ signal }): Promise<Source[]> => {
      const page = async (cursor: string | undefined) =>
        unwrap(
          await api.GET("/api/v1/sources", {
            params: { query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
            signal,
          }),
        );
      const all: Source[] = [];
      await followPages(await page(undefined), page, (p) => all.push(...p.sources));
      return all;
    },
    placeholderData: keepPreviousData,
    refetchInterval: (q) => (anyPending(q.state.data) ? PENDING_POLL_MS : false),
  });
}

export function useSource(name: string) {
  return useQuery({
    queryKey: sourceKeys.detail(name),
    queryFn: async ({ signal }): Promise<Source> =>
      unwrap(await api.GET("/api/v1/sources/{name}", { params: { path: { name } }, signal })),
    refetchInterval: (q) => (q.state.data?.status === "pending" ? PENDING_POLL_MS : false),
  });
}

/** POST /sources/{name}/sync: answers once the sync ran (or was queued behind another one). */
export function useSyncSource(name: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async () => unwrap(await api.POST("/api/v1/sources/{name}/sync", { params: { path: { name } } })),
    onSuccess: (s) => {
      qc.setQueryData(sourceKeys.detail(s.name), s);
      return Promise.all([
        qc.invalidateQueries({ queryKey: sourceKeys.list() }),
        qc.invalidateQueries({ queryKey: moduleKeys.all }),
        qc.invalidateQueries({ queryKey: assignmentKeys.all }),
      ]);
    },
  });
}

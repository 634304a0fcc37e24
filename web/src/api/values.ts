/** Value sets (layered data modules read as `values`) and an agent's merged values with their origins. */
import type { AgentValues, RequestBody, ValueSet, ValueSetPage } from "@orch/client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";

export type { AgentValues, ValueSet, ValueSetPage };
export type ValueSetBody = RequestBody<"/api/v1/values/{name}", "put">;
export type AgentValuesBody = RequestBody<"/api/v1/agents/{node_id}/values", "put">;
export type ValueOrigin = AgentValues["origins"][number];

export const VALUE_SETS_PAGE_SIZE = 100;
const KEY = ["values"] as const;

export function useValueSets(cursor: string | undefined) {
  return useQuery({
    queryKey: [...KEY, "list", { cursor }],
    queryFn: async (): Promise<ValueSetPage> =>
      unwrap(
        await api.GET("/api/v1/values", {
          params: { query: { limit: VALUE_SETS_PAGE_SIZE, ...(cursor ? { cursor } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

export function useValueSet(name: string | undefined) {
  return useQuery({
    queryKey: [...KEY, "set", name],
    enabled: Boolean(name),
    queryFn: async (): Promise<ValueSet> =>
      unwrap(await api.GET("/api/v1/values/{name}", { params: { path: { name: name! } } })),
  });
}

/** Creates or replaces a set; every values query (lists, sets, agents' merged values) is stale after it. */
export function usePutValueSet() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async ({ name, body }: { name: string; body: ValueSetBody }) =>
      unwrap(await api.PUT("/api/v1/values/{name}", { params: { path: { name } }, body })),
    onSettled: () => qc.invalidateQueries({ queryKey: KEY }),
  });
}

export function useDeleteValueSet() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (name: string) =>
      unwrap(await api.DELETE("/api/v1/values/{name}", { params: { path: { name } } })),
    onSettled: () => qc.invalidateQueries({ queryKey: KEY }),
  });
}

export function useAgentValues(nodeId: string) {
  return useQuery({
    queryKey: [...KEY, "agent", nodeId],
    queryFn: async (): Promise<AgentValues> =>
      unwrap(await api.GET("/api/v1/agents/{node_id}/values", { params: { path: { node_id: nodeId } } })),
  });
}

/**
 * Replaces an agent's own values (the highest layer) with YAML text; "" clears them. The answer is
 * the new merged view, cached at once; on success every values query is stale (a refusal changed
 * nothing, and refetching then could turn a 404 into a page error under the message).
 */
export function usePutAgentValues(nodeId: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: AgentValuesBody & { content: string }): Promise<AgentValues> =>
      unwrap(await api.PUT("/api/v1/agents/{node_id}/values", { params: { path: { node_id: nodeId } }, body })),
    onSuccess: (merged) => {
      qc.setQueryData([...KEY, "agent", nodeId], merged);
      return qc.invalidateQueries({ queryKey: KEY });
    },
  });
}

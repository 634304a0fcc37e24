/**
 * Agents: the fleet list (every page), counts, approval, tags, attributes and metrics. Query keys
 * start with "agents" so one invalidation after a change refreshes every agents view.
 */
import { type Agent, type AgentAttributes, followPages, type MetricsHistory, type ResponseBody } from "@orch/client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";

export type { Agent };
export type AgentStatus = Agent["status"];

export type AgentSummary = ResponseBody<"/api/v1/agents/summary", "get">;

export const agentKeys = {
  all: ["agents"] as const,
  list: (selector: string, status: string) => ["agents", "list", { selector, status }] as const,
  summary: (selector: string) => ["agents", "summary", { selector }] as const,
  detail: (nodeId: string) => ["agents", "detail", nodeId] as const,
  attributes: (nodeId: string) => ["agents", "detail", nodeId, "attributes"] as const,
  metrics: (nodeId: string, since: string) => ["agents", "detail", nodeId, "metrics", since] as const,
};

export const FLEET_POLL_MS = 5000;
const PAGE = 500;

/** Every agent matching the selector and status, all pages; `onData` runs when a full list arrived. */
export function useAllAgents(
  selector: string,
  status: string,
  opts: { enabled?: boolean; poll?: boolean; onData?: (agents: Agent[]) => void } = {},
) {
  return useQuery({
    queryKey: agentKeys.list(selector, status),
    queryFn: async ({ signal }) => {
      const page = async (cursor: string | undefined) => {
        const query = {
          limit: PAGE,
          ...(cursor ? { cursor } : {}),
          ...(selector ? { selector } : {}),
          ...(status ? { status: status as AgentStatus } : {}),
        };
        return unwrap(await api.GET("/api/v1/agents", { params: { query }, signal }));
      };
      // The whole fleet (counts, the virtual table): 5,000 agents are 10 pages of 500.
      const agents: Agent[] = [];
      await followPages(await page(undefined), page, (p) => agents.push(...p.agents));
      opts.onData?.(agents);
      return agents;
    },
    enabled: opts.enabled ?? true,
    refetchInterval: opts.poll === false ? false : FLEET_POLL_MS,
    // A new selector keeps the old rows on screen until its answer arrives (no flash, no scroll jump).
    placeholderData: keepPreviousData,
  });
}

export function useAgentSummary(selector: string, opts: { enabled?: boolean } = {}) {
  return useQuery({
    queryKey: agentKeys.summary(selector),
    queryFn: async ({ signal }): Promise<AgentSummary> =>
      unwrap(await api.GET("/api/v1/agents/summary", { params: { query: selector ? { selector } : {} }, signal })),
    enabled: opts.enabled ?? true,
    refetchInterval: FLEET_POLL_MS,
    placeholderData: keepPreviousData,
  });
}

export function useAgent(nodeId: string) {
  return useQuery({
    queryKey: agentKeys.detail(nodeId),
    queryFn: async () => unwrap(await api.GET("/api/v1/agents/{node_id}", { params: { path: { node_id: nodeId } } })),
  });
}

export function useAgentAttributes(nodeId: string) {
  return useQuery({
    queryKey: agentKeys.attributes(nodeId),
    queryFn: async (): Promise<AgentAttributes> =>
      unwrap(await api.GET("/api/v1/agents/{node_id}/attributes", { params: { path: { node_id: nodeId } } })),
  });
}

/** History since `sinceMs` ago, newest first (as the API answers); refreshed every minute. */
export function useAgentMetrics(nodeId: string, rangeMs: number, rangeKey: string) {
  return useQuery({
    queryKey: agentKeys.metrics(nodeId, rangeKey),
    queryFn: async (): Promise<MetricsHistory> => {
      const since = new Date(Date.now() - rangeMs).toISOString();
      return unwrap(
        await api.GET("/api/v1/agents/{node_id}/metrics", {
          params: { path: { node_id: nodeId }, query: { since, limit: 1000 } },
        }),
      );
    },
    refetchInterval: 60_000,
  });
}

/** After any agent change: lists, counts and details all refetch. */
function useInvalidateAgents() {
  const qc = useQueryClient();
  return () => qc.invalidateQueries({ queryKey: agentKeys.all });
}

export function useApproveAgent() {
  const invalidate = useInvalidateAgents();
  return useMutation({
    mutationFn: async ({ nodeId, name }: { nodeId: string; name: string }) =>
      unwrap(
        await api.POST("/api/v1/agents/{node_id}", {
          params: { path: { node_id: nodeId } },
          body: { status: "approved", name },
        }),
      ),
    onSettled: invalidate,
  });
}

export function useRejectAgent() {
  const invalidate = useInvalidateAgents();
  return useMutation({
    mutationFn: async ({ nodeId }: { nodeId: string }) =>
      unwrap(
        await api.POST("/api/v1/agents/{node_id}", {
          params: { path: { node_id: nodeId } },
          body: { status: "rejected" },
        }),
      ),
    onSettled: invalidate,
  });
}

export function useDeleteAgent() {
  const invalidate = useInvalidateAgents();
  return useMutation({
    mutationFn: async ({ nodeId }: { nodeId: string }) =>
      unwrap(await api.DELETE("/api/v1/agents/{node_id}", { params: { path: { node_id: nodeId } } })),
    onSettled: invalidate,
  });
}

export function useSetTag(nodeId: string) {
  const qc = useQueryClient();
  const invalidate = useInvalidateAgents();
  return useMutation({
    mutationFn: async ({ key, value }: { key: string; value: string }) =>
      unwrap(
        await api.PUT("/api/v1/agents/{node_id}/tags/{key}", {
          params: { path: { node_id: nodeId, key } },
          body: { value },
        }),
      ),
    onSuccess: (agent) => qc.setQueryData(agentKeys.detail(nodeId), agent),
    onSettled: invalidate,
  });
}

export function useRemoveTag(nodeId: string) {
  const qc = useQueryClient();
  const invalidate = useInvalidateAgents();
  return useMutation({
    mutationFn: async ({ key }: { key: string }) =>
      unwrap(await api.DELETE("/api/v1/agents/{node_id}/tags/{key}", { params: { path: { node_id: nodeId, key } } })),
    onSuccess: (agent) => qc.setQueryData(agentKeys.detail(nodeId), agent),
    onSettled: invalidate,
  });
}

/** State operations and drift of one agent (read-only views for the agent page). */
import type { DriftRecord, StateOperationPage } from "@orch/client";
import { useQuery } from "@tanstack/react-query";
import { api, isStatus, unwrap } from "./client";

export type { DriftRecord, StateOperationPage };

export const stateKeys = {
  operations: (nodeId: string) => ["state", "operations", { nodeId }] as const,
  drift: (nodeId: string) => ["state", "drift", nodeId] as const,
};

/** The newest operations of one agent (GET /api/v1/state/operations?node_id=). */
export function useAgentOperations(nodeId: string, limit = 10) {
  return useQuery({
    queryKey: stateKeys.operations(nodeId),
    queryFn: async (): Promise<StateOperationPage> =>
      unwrap(
        await api.GET("/api/v1/state/operations", { params: { query: { node_id: nodeId, limit: String(limit) } } }),
      ),
    refetchInterval: 15_000,
  });
}

/** The latest drift record, or null when no drift check has run yet (404 drift_not_found). */
export function useLatestDrift(nodeId: string) {
  return useQuery({
    queryKey: stateKeys.drift(nodeId),
    queryFn: async (): Promise<DriftRecord | null> => {
      try {
        return unwrap(
          await api.GET("/api/v1/agents/{node_id}/drift/latest", { params: { path: { node_id: nodeId } } }),
        );
      } catch (err) {
        if (isStatus(err, 404)) return null;
        throw err;
      }
    },
  });
}

/**
 * State of one agent: its operations (apply, plan, drift check), single-agent apply/plan, drift
 * records and checks, and re-apply. Progress comes from the POST's `?wait=` (the gateway answers
 * when the operation ended, or 202 after RUN_WAIT_SECONDS); an operation still open after that is
 * refetched every OPEN_POLL_MS until it ends — never a 1-second loop.
 */
import type { DriftCheck, DriftRecord, StateOperation, StateOperationPage } from "@orch/client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { isOpen } from "../lib/operation-text";
import { api, isStatus, unwrap } from "./client";

export type { DriftCheck, DriftRecord, StateOperation, StateOperationPage };
export type RunKind = "apply" | "plan";

/** Seconds a POST may block for its operation to end (the API allows 300). */
export const RUN_WAIT_SECONDS = 30;
/** How often an operation still open after the wait is fetched again. */
export const OPEN_POLL_MS = 2000;

export const stateKeys = {
  all: ["state"] as const,
  operations: (nodeId: string) => ["state", "operations", { nodeId }] as const,
  operation: (id: string) => ["state", "operation", id] as const,
  drift: (nodeId: string) => ["state", "drift", nodeId] as const,
};

/** The newest operations of one agent (GET /api/v1/state/operations?node_id=). */
export function useAgentOperations(nodeId: string, limit = 10) {
  return useQuery({
    queryKey: stateKeys.operations(nodeId),
    queryFn: async (): Promise<StateOperationPage> =>
      unwrap(await api.GET("/api/v1/state/operations", { params: { query: { node_id: nodeId, limit } } })),
    refetchInterval: (q) => (q.state.data?.operations.some((o) => isOpen(o.status)) ? OPEN_POLL_MS : 15_000),
  });
}

/** One operation with its per-resource results; refetched every OPEN_POLL_MS only while it is open. */
export function useOperation(operationId: string | undefined) {
  return useQuery({
    queryKey: stateKeys.operation(operationId ?? ""),
    queryFn: async (): Promise<StateOperation> =>
      unwrap(
        await api.GET("/api/v1/state/operations/{operation_id}", {
          params: { path: { operation_id: operationId ?? "" } },
        }),
      ),
    enabled: Boolean(operationId),
    refetchInterval: (q) => (q.state.data && isOpen(q.state.data.status) ? OPEN_POLL_MS : false),
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

async function runOnAgent(nodeId: string, kind: RunKind, modules: string[]): Promise<StateOperation> {
  const init = {
    params: { path: { node_id: nodeId }, query: { wait: RUN_WAIT_SECONDS } },
    body: { modules },
  };
  return unwrap(
    kind === "apply"
      ? await api.POST("/api/v1/agents/{node_id}/apply", init)
      : await api.POST("/api/v1/agents/{node_id}/plan", init),
  );
}

async function checkDrift(nodeId: string): Promise<DriftCheck> {
  return unwrap(
    await api.POST("/api/v1/agents/{node_id}/drift", {
      params: { path: { node_id: nodeId }, query: { wait: RUN_WAIT_SECONDS } },
    }),
  );
}

/** Caches what a POST answered and refreshes the agent's operations and drift views. */
function useRecordState(nodeId: string) {
  const qc = useQueryClient();
  return {
    operation: (op: StateOperation) => qc.setQueryData(stateKeys.operation(op.id), op),
    drift: (d: DriftRecord) => qc.setQueryData(stateKeys.drift(nodeId), d),
    refresh: () =>
      Promise.all([
        qc.invalidateQueries({ queryKey: stateKeys.operations(nodeId) }),
        qc.invalidateQueries({ queryKey: stateKeys.drift(nodeId) }),
      ]),
  };
}

/** Apply or plan modules on this one agent; resolves with the operation (ended, or still open). */
export function useRunOnAgent(nodeId: string) {
  const record = useRecordState(nodeId);
  return useMutation({
    mutationFn: ({ kind, modules }: { kind: RunKind; modules: string[] }) => runOnAgent(nodeId, kind, modules),
    onSuccess: record.operation,
    onSettled: record.refresh,
  });
}

/** "Check now": a drift check of the agent's snapshot; `drift` is null when none was recorded. */
export function useCheckDrift(nodeId: string) {
  const record = useRecordState(nodeId);
  return useMutation({
    mutationFn: () => checkDrift(nodeId),
    onSuccess: (c) => {
      record.operation(c.operation);
      if (c.drift) record.drift(c.drift);
    },
    onSettled: record.refresh,
  });
}

export interface Reapplied {
  apply: StateOperation;
  /** The drift check run after a successful apply, or null when the apply did not succeed. */
  check: DriftCheck | null;
}

/**
 * "Re-apply": applies the modules the drift check covered (its operation's modules: every module of
 * the agent's snapshots) to the agent, then checks drift again so the status shown is a fresh check.
 */
export function useReapply(nodeId: string) {
  const record = useRecordState(nodeId);
  return useMutation({
    mutationFn: async (drift: DriftRecord): Promise<Reapplied> => {
      const checked = unwrap(
        await api.GET("/api/v1/agents/{node_id}/state/operations/{operation_id}", {
          params: { path: { node_id: nodeId, operation_id: drift.operation_id } },
        }),
      );
      const apply = await runOnAgent(nodeId, "apply", checked.modules);
      return { apply, check: apply.status === "succeeded" ? await checkDrift(nodeId) : null };
    },
    onSuccess: ({ apply, check }) => {
      record.operation(apply);
      if (check) record.operation(check.operation);
      if (check?.drift) record.drift(check.drift);
    },
    onSettled: record.refresh,
  });
}

/** Drift checks older than this many records show their plain status. */
const DRIFT_RECORDS_FOR_BADGES = 50;

/**
 * Which recent drift checks of an agent found drift, by operation id: one request per agent (its
 * newest records), so an operation badge needs no request of its own. The key sits under the agent's
 * drift key, so whatever refreshes the latest record (a check, a re-apply) refreshes this too.
 */
export function useDriftByOperation(nodeId: string, enabled = true) {
  return useQuery({
    queryKey: [...stateKeys.drift(nodeId), "by-operation"],
    queryFn: async ({ signal }): Promise<ReadonlyMap<string, boolean>> => {
      const page = unwrap(
        await api.GET("/api/v1/agents/{node_id}/drift", {
          params: { path: { node_id: nodeId }, query: { limit: DRIFT_RECORDS_FOR_BADGES } },
          signal,
        }),
      );
      return new Map(page.records.map((r) => [r.operation_id, r.drifted]));
    },
    enabled: enabled && nodeId !== "",
  });
}

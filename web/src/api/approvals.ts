/**
 * Four-eyes approvals (docs/approvals.md): change requests every operator may list, read and decide
 * (approve / deny with a comment; cancel for the requester or an admin), and the approval policies
 * an admin edits (PUT replaces, DELETE removes). A plan run's operations carry the per-agent diffs of
 * a held `assignment.apply`.
 */
import type { AssignmentRun, RequestBody, ResponseBody } from "@orch/client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { runFinished } from "../lib/run-progress";
import { api, unwrap } from "./client";

export type ChangeRequest = ResponseBody<"/api/v1/change-requests/{id}", "get">;
export type ChangeRequestPage = ResponseBody<"/api/v1/change-requests", "get">;
export type ApprovalPolicy = ResponseBody<"/api/v1/approval-policies/{name}", "get">;
export type ApprovalPolicyPut = RequestBody<"/api/v1/approval-policies/{name}", "put">;

/** The Requests page's filters: the API's `to_approve` and `mine`, or every request. */
export type RequestFilter = "to_approve" | "mine" | "all";

const CR = ["change-requests"] as const;
const POLICIES = ["approval-policies"] as const;

export function useChangeRequests(filter: RequestFilter, cursor: string | undefined, limit = 25) {
  return useQuery({
    queryKey: [...CR, "list", filter, cursor ?? ""],
    queryFn: async ({ signal }): Promise<ChangeRequestPage> =>
      unwrap(
        await api.GET("/api/v1/change-requests", {
          params: {
            query: {
              limit,
              ...(cursor ? { cursor } : {}),
              ...(filter === "to_approve" ? { to_approve: true } : filter === "mine" ? { mine: true } : {}),
            },
          },
          signal,
        }),
      ),
    refetchInterval: 15_000,
  });
}

/** How many requests wait for the caller's decision (first page only: "25+" beyond). */
export function useToApproveCount() {
  const q = useChangeRequests("to_approve", undefined);
  return { count: q.data?.requests.length ?? 0, more: q.data?.has_more ?? false };
}

/** One request; refetched every 3 s while it is pending or approved (it may move on elsewhere). */
export function useChangeRequest(id: string) {
  return useQuery({
    queryKey: [...CR, id],
    queryFn: async ({ signal }): Promise<ChangeRequest> =>
      unwrap(await api.GET("/api/v1/change-requests/{id}", { params: { path: { id } }, signal })),
    refetchInterval: (q) => (q.state.data && ["pending", "approved"].includes(q.state.data.status) ? 3000 : false),
  });
}

export type Decision = "approve" | "deny" | "cancel" | "replan";

/** approve / deny / cancel (or re-plan) with an optional comment; answers the request as it is now. */
export function useDecide(id: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async ({ decision, comment }: { decision: Decision; comment: string }): Promise<ChangeRequest> => {
      const opts = { params: { path: { id } }, body: comment.trim() ? { comment: comment.trim() } : {} };
      return unwrap(
        decision === "approve"
          ? await api.POST("/api/v1/change-requests/{id}/approve", opts)
          : decision === "deny"
            ? await api.POST("/api/v1/change-requests/{id}/deny", opts)
            : decision === "replan"
              ? await api.POST("/api/v1/change-requests/{id}/replan", opts)
              : await api.POST("/api/v1/change-requests/{id}/cancel", opts),
      );
    },
    onSuccess: (r) => {
      qc.setQueryData([...CR, id], r);
      return qc.invalidateQueries({ queryKey: [...CR, "list"] });
    },
  });
}

/** The plan run of a held apply; read again every 2 s until every agent reported. */
export function usePlanRun(assignment: string, runId: string | undefined) {
  return useQuery({
    queryKey: ["runs", assignment, runId ?? "", "plan-of-request"],
    queryFn: async ({ signal }): Promise<AssignmentRun> =>
      unwrap(
        await api.GET("/api/v1/assignments/{name}/runs/{run_id}", {
          params: { path: { name: assignment, run_id: runId ?? "" } },
          signal,
        }),
      ),
    enabled: Boolean(runId && assignment),
    refetchInterval: (q) => (q.state.data && runFinished(q.state.data) ? false : 2000),
  });
}

export function useApprovalPolicies() {
  return useQuery({
    queryKey: POLICIES,
    queryFn: async ({ signal }): Promise<ApprovalPolicy[]> => {
      const all: ApprovalPolicy[] = [];
      let cursor: string | undefined;
      do {
        const page = unwrap(
          await api.GET("/api/v1/approval-policies", {
            params: { query: { limit: 100, ...(cursor ? { cursor } : {}) } },
            signal,
          }),
        );
        all.push(...page.policies);
        cursor = page.has_more && page.next_cursor ? page.next_cursor : undefined;
      } while (cursor);
      return all;
    },
  });
}

export function useApprovalPolicy(name: string) {
  return useQuery({
    queryKey: [...POLICIES, name],
    queryFn: async ({ signal }): Promise<ApprovalPolicy> =>
      unwrap(await api.GET("/api/v1/approval-policies/{name}", { params: { path: { name } }, signal })),
  });
}

export function useSaveApprovalPolicy() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async ({ name, body }: { name: string; body: ApprovalPolicyPut }): Promise<ApprovalPolicy> =>
      unwrap(await api.PUT("/api/v1/approval-policies/{name}", { params: { path: { name } }, body })),
    onSuccess: (p) => {
      qc.setQueryData([...POLICIES, p.name], p);
      return qc.invalidateQueries({ queryKey: POLICIES });
    },
  });
}

export function useDeleteApprovalPolicy() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (name: string) =>
      unwrap(await api.DELETE("/api/v1/approval-policies/{name}", { params: { path: { name } } })),
    onSuccess: (_r, name) => {
      qc.removeQueries({ queryKey: [...POLICIES, name] });
      return qc.invalidateQueries({ queryKey: POLICIES });
    },
  });
}

/** Operators: the paged list for everyone; adding and removing for admins (the API enforces it). */
import type { Operator, OperatorPage, RequestBody } from "@orch/client";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";

export type { Operator, OperatorPage };
export type NewOperator = RequestBody<"/api/v1/operators", "post">;

export const OPERATORS_PAGE_SIZE = 100;
const KEY = ["operators"] as const;

export function useOperators(cursor: string | undefined) {
  return useQuery({
    queryKey: [...KEY, { cursor }],
    queryFn: async (): Promise<OperatorPage> =>
      unwrap(
        await api.GET("/api/v1/operators", {
          params: { query: { limit: OPERATORS_PAGE_SIZE, ...(cursor ? { cursor } : {}) } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

export function useAddOperator() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: NewOperator) => unwrap(await api.POST("/api/v1/operators", { body })),
    onSuccess: () => qc.invalidateQueries({ queryKey: KEY }),
  });
}

export function useRemoveOperator() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (operatorId: string) =>
      unwrap(await api.DELETE("/api/v1/operators/{operator_id}", { params: { path: { operator_id: operatorId } } })),
    onSettled: () => qc.invalidateQueries({ queryKey: KEY }),
  });
}

/** One operator by id (e.g. to name an assignment's created_by); cached for a few minutes. */
export function useOperator(operatorId: string, enabled = true) {
  return useQuery({
    queryKey: [...KEY, "one", operatorId],
    queryFn: async ({ signal }) =>
      unwrap(
        await api.GET("/api/v1/operators/{operator_id}", { params: { path: { operator_id: operatorId } }, signal }),
      ),
    enabled,
    staleTime: 5 * 60_000,
  });
}

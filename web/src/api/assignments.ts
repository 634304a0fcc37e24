/**
 * Assignments: list, one, create, update, delete. Query keys start with "assignments" so one
 * invalidation after a change refreshes every view; run/plan/apply hooks build on `assignmentKeys`.
 */
import { type Assignment, type AssignmentPage, followPages, type RequestBody } from "@orch/client";
import { type HeldCatalogWrite, isHeldCatalogWrite } from "./catalog-held";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap } from "./client";

export type { Assignment, AssignmentPage };
export type NewAssignment = RequestBody<"/api/v1/assignments", "post">;
export type AssignmentChange = RequestBody<"/api/v1/assignments/{name}", "put">;

export const assignmentKeys = {
  all: ["assignments"] as const,
  list: () => ["assignments", "list"] as const,
  detail: (name: string) => ["assignments", "detail", name] as const,
};

const PAGE = 500;

/** Every assignment, all pages (an assignment list is short: one per role or environment). */
export function useAssignments() {
  return useQuery({
    queryKey: assignmentKeys.list(),
    queryFn: async ({ signal }): Promise<Assignment[]> => {
      const page = async (cursor: string | undefined) =>
        unwrap(
          await api.GET("/api/v1/assignments", {
            params: { query: { limit: PAGE, ...(cursor ? { cursor } : {}) } },
            signal,
          }),
        );
      const all: Assignment[] = [];
      await followPages(await page(undefined), page, (p) => all.push(...p.assignments));
      return all;
    },
    placeholderData: keepPreviousData,
  });
}

export function useAssignment(name: string, opts: { enabled?: boolean } = {}) {
  return useQuery({
    queryKey: assignmentKeys.detail(name),
    queryFn: async ({ signal }): Promise<Assignment> =>
      unwrap(await api.GET("/api/v1/assignments/{name}", { params: { path: { name } }, signal })),
    enabled: opts.enabled ?? true,
  });
}

export function useCreateAssignment() {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: NewAssignment) => unwrap(await api.POST("/api/v1/assignments", { body })),
    onSuccess: (a) => {
      // Held for approval (catalog.write): nothing changed yet.
      if (isHeldCatalogWrite(a)) return;
      qc.setQueryData(assignmentKeys.detail(a.name), a);
      return qc.invalidateQueries({ queryKey: assignmentKeys.list() });
    },
  });
}

export function useUpdateAssignment(name: string) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (body: AssignmentChange) =>
      unwrap(await api.PUT("/api/v1/assignments/{name}", { params: { path: { name } }, body })),
    onSuccess: (a) => {
      if (isHeldCatalogWrite(a)) return;
      qc.setQueryData(assignmentKeys.detail(a.name), a);
      return qc.invalidateQueries({ queryKey: assignmentKeys.list() });
    },
  });
}

/** Deletes an assignment; `onHeld` hears of a delete an approval policy held (before the caller's onSuccess). */
export function useDeleteAssignment(onHeld?: (held: HeldCatalogWrite) => void) {
  const qc = useQueryClient();
  return useMutation({
    mutationFn: async (name: string) =>
      unwrap(await api.DELETE("/api/v1/assignments/{name}", { params: { path: { name } } })),
    onSuccess: (r, name) => {
      if (isHeldCatalogWrite(r)) return onHeld?.(r);
      qc.removeQueries({ queryKey: assignmentKeys.detail(name) });
    },
    onSettled: () => qc.invalidateQueries({ queryKey: assignmentKeys.list() }),
  });
}

/** Audit events: one page of GET /api/v1/audit for the filters and cursor in the page's URL. */
import type { AuditEvent, AuditPage } from "@orch/client";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import type { AuditFilters } from "../lib/audit-query";
import { api, unwrap } from "./client";

export type { AuditEvent, AuditPage };

export const AUDIT_PAGE_SIZE = 50;

export function useAuditPage(filters: AuditFilters, cursor: string | undefined) {
  return useQuery({
    queryKey: ["audit", "page", { filters, cursor }],
    queryFn: async (): Promise<AuditPage> =>
      unwrap(
        await api.GET("/api/v1/audit", {
          params: { query: { ...filters, ...(cursor ? { cursor } : {}), limit: AUDIT_PAGE_SIZE } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
}

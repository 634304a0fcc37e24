/**
 * The audit page's view state ↔ the query string ↔ GET /api/v1/audit's parameters. The page's URL
 * uses the API's own parameter names, so a bookmarked console URL and an API call read the same.
 */

/** The filters of GET /api/v1/audit (services/gateway/src/routes/audit-schemas.ts), in form order. */
export const AUDIT_FILTERS = [
  { name: "agent", label: "Agent", hint: "node id or name" },
  { name: "operator", label: "Operator", hint: "the actor: id or name" },
  { name: "event_type", label: "Event type", hint: "exact, e.g. agent.approved" },
  { name: "category", label: "Category", hint: "prefix at a dot, e.g. agent" },
  { name: "after", label: "After", hint: "RFC 3339, e.g. 2025-01-31T12:00:00Z" },
  { name: "before", label: "Before", hint: "RFC 3339, not included" },
] as const;

export type AuditFilterName = (typeof AUDIT_FILTERS)[number]["name"];
export type AuditFilters = Partial<Record<AuditFilterName, string>>;

export interface AuditView {
  filters: AuditFilters;
  cursor: string | undefined;
  live: boolean;
}

/** Reads the view from the query string; blank values count as absent (the API refuses empty ones). */
export function readAuditView(search: URLSearchParams): AuditView {
  const filters: AuditFilters = {};
  for (const { name } of AUDIT_FILTERS) {
    const v = search.get(name)?.trim();
    if (v) filters[name] = v;
  }
  return { filters, cursor: search.get("cursor")?.trim() || undefined, live: search.get("live") === "1" };
}

/** The query string for a view: only set values, in a stable order (so equal views give equal URLs). */
export function writeAuditView(view: AuditView): URLSearchParams {
  const out = new URLSearchParams();
  for (const { name } of AUDIT_FILTERS) {
    const v = view.filters[name]?.trim();
    if (v) out.set(name, v);
  }
  if (view.cursor) out.set("cursor", view.cursor);
  if (view.live) out.set("live", "1");
  return out;
}

/** Parameters for the stream: the same filters; a stream never starts from the page's cursor. */
export function streamQuery(filters: AuditFilters): string {
  return writeAuditView({ filters, cursor: undefined, live: false }).toString();
}

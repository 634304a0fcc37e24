import type { AuditFilters } from "../../lib/audit-query";

/** How many filters the shown events are filtered by (the applied ones, not what is being typed). */
export function activeFilterCount(filters: AuditFilters): number {
  return Object.values(filters).filter((v) => v !== undefined && v.trim() !== "").length;
}

/** The phone-width "Filters" button's words: how many filters apply while the panel is folded. */
export function filterToggleText(count: number): string {
  return count === 0 ? "Filters" : `Filters (${count} active)`;
}

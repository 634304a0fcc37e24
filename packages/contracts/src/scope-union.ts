/**
 * An operator's reach as several agent selectors, any of which admits an agent: the stored scope
 * and each just-in-time access grant (docs/approvals.md). The selector grammar has no "or"; this
 * joins whole selectors with ` || `, which no valid scope holds (scopes are checked for it).
 */
export const SCOPE_JOIN = " || ";

/** The alternatives of a scope; [] for "" (unscoped). */
export const splitScope = (scope: string): string[] =>
  scope
    .split("||")
    .map((s) => s.trim())
    .filter(Boolean);

/**
 * The union of an operator's scope and granted selectors: "" (unscoped) when the base is unscoped or
 * any part is `*`, since nothing is wider.
 */
export function joinScopes(base: string, granted: readonly string[]): string {
  if (!base.trim()) return "";
  const parts = [...new Set([base, ...granted].map((s) => s.trim()).filter(Boolean))];
  if (parts.includes("*")) return "";
  return parts.join(SCOPE_JOIN);
}

import { invalid } from "./errors.js";

/** Clamps a requested page size: 0/absent → default; outside 1..max → INVALID_ARGUMENT naming `limit`. */
export function pageLimit(limit: number | undefined, def = 50, max = 500): number {
  if (!limit) return def;
  if (!Number.isInteger(limit) || limit < 1 || limit > max) throw invalid("invalid_limit", `limit must be an integer between 1 and ${max}`, { parameter: "limit" });
  return limit;
}

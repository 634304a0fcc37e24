import { invalid } from "./errors.js";

/** Clamps a requested page size: 0/absent → default; outside 1..max → INVALID_ARGUMENT naming `limit`. */
export function pageLimit(limit: number | undefined, def = 50, max = 500): number {
  if (!limit) return def;
  if (!Number.isInteger(limit) || limit < 1 || limit > max) throw invalid("invalid_limit", `limit must be an integer between 1 and ${max}`, { parameter: "limit" });
  return limit;
}

/**
 * One page of a keyset query that fetched `limit + 1` rows: the extra row only says whether more
 * follow, and the last row of the page is the cursor for the next one ("" at the end).
 */
export function keysetPage<T>(rows: T[], limit: number, key: (row: T) => string): { page: T[]; nextCursor: string } {
  const page = rows.slice(0, limit);
  return { page, nextCursor: rows.length > limit ? key(page.at(-1)!) : "" };
}

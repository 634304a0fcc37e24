import { BLOB_DIGEST, NODE_ID_RE, ULID_RE } from "@orch/contracts";
import { invalid } from "./errors.js";

/** The largest page any list returns. */
export const MAX_PAGE_LIMIT = 500;

/** Clamps a requested page size: 0/absent → default; outside 1..max → INVALID_ARGUMENT naming `limit`. */
export function pageLimit(limit: number | undefined, def = 50, max = MAX_PAGE_LIMIT): number {
  if (!limit) return def;
  if (!Number.isInteger(limit) || limit < 1 || limit > max)
    throw invalid("invalid_limit", `limit must be an integer between 1 and ${max}`, { parameter: "limit" });
  return limit;
}

/**
 * What a cursor may be, per kind of list key. A list hands out the key of its last row as the next
 * cursor, so a cursor is valid exactly when it has the grammar of that key: anything else was not
 * handed out by us, and every list refuses it the same way instead of some returning a page.
 */
export const CURSOR_KEYS = {
  /** ULID ids (operators, channels, windows, deliveries, notifications, operations, drift, sessions, events). */
  ulid: ULID_RE,
  /** Agent node ids (the agent link's rule). */
  node_id: NODE_ID_RE,
  /** Names (secrets, modules, assignments): the union of their grammars. */
  name: /^[A-Za-z0-9_.-]{1,128}$/,
  /** Blob digests (`sha256:` and 64 hex digits). */
  digest: BLOB_DIGEST,
} as const;
export type CursorKey = keyof typeof CURSOR_KEYS;

/**
 * A list request's cursor: "" (first page) or a key of the list's kind, else INVALID_ARGUMENT
 * `invalid_cursor` naming `cursor`. ULIDs are compared as text, so a lowercase one is normalised.
 */
export function pageCursor(cursor: string | undefined, kind: CursorKey): string {
  if (!cursor) return "";
  const c = kind === "ulid" ? cursor.toUpperCase() : cursor;
  if (!CURSOR_KEYS[kind].test(c)) {
    throw invalid("invalid_cursor", "cursor must be the next_cursor of a previous page", { field: "cursor" });
  }
  return c;
}

/**
 * One page of a keyset query that fetched `limit + 1` rows: the extra row only says whether more
 * follow, and the last row of the page is the cursor for the next one ("" at the end).
 */
export function keysetPage<T>(rows: T[], limit: number, key: (row: T) => string): { page: T[]; nextCursor: string } {
  const page = rows.slice(0, limit);
  return { page, nextCursor: rows.length > limit ? key(page.at(-1)!) : "" };
}

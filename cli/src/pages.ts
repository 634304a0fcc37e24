/** Keyset pagination as the API does it: one page, or with `all` every page following next_cursor. */
import { followPages, PagingError } from "@orch/client";
import { CliError } from "./errors.js";

interface Page {
  has_more: boolean;
  next_cursor: string | null;
}

export async function pages<K extends string, P extends Page & { [k in K]: unknown[] }>(
  fetchPage: (cursor: string | undefined) => Promise<P>,
  key: K,
  q: { cursor?: string | undefined; all?: boolean | undefined },
): Promise<P> {
  const first = await fetchPage(q.cursor);
  if (!q.all) return first;
  const items: unknown[] = [];
  try {
    const last = await followPages(first, fetchPage, (page) => items.push(...page[key]));
    return { ...last, [key]: items, has_more: false, next_cursor: null };
  } catch (err) {
    if (err instanceof PagingError) throw new CliError(err.message, "bad_response");
    throw err;
  }
}

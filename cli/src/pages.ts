/** Keyset pagination as the API does it: one page, or with `all` every page following next_cursor. */
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
  let page = await fetchPage(q.cursor);
  if (!q.all) return page;
  const items = [...page[key]];
  const seen = new Set<string>();
  while (page.has_more && page.next_cursor) {
    if (seen.has(page.next_cursor))
      throw new CliError("the server's pagination does not advance (repeated cursor)", "bad_response");
    seen.add(page.next_cursor);
    page = await fetchPage(page.next_cursor);
    items.push(...page[key]);
  }
  return { ...page, [key]: items, has_more: false, next_cursor: null };
}

/**
 * Reads every page of a cursor-paged list. The fleet needs the whole list (counts, sorting and the
 * virtual table all work on it); 5,000 agents are 10 pages of 500.
 */
export interface CursorPage<T> {
  items: T[];
  next_cursor: string | null;
}

export async function fetchAllPages<T>(
  fetchPage: (cursor: string | undefined) => Promise<CursorPage<T>>,
  opts: { maxPages?: number } = {},
): Promise<T[]> {
  const maxPages = opts.maxPages ?? 1000;
  const out: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < maxPages; i++) {
    const page = await fetchPage(cursor);
    out.push(...page.items);
    // A cursor that does not advance would loop forever; stop instead.
    if (!page.next_cursor || page.next_cursor === cursor) return out;
    cursor = page.next_cursor;
  }
  return out;
}

/** Thrown when a list's `next_cursor` repeats: following it would loop forever. */
export class PagingError extends Error {
  override name = "PagingError";
}

/**
 * Keyset paging as the API does it (docs/http-api.md#cursors): starting from `first`, fetches the page
 * after each `next_cursor` until it is null, handing every page (the first included) to `onPage`.
 * Returns the last page. A cursor seen twice throws PagingError instead of looping.
 */
export async function followPages<P extends { next_cursor: string | null }>(
  first: P,
  fetchPage: (cursor: string) => Promise<P>,
  onPage: (page: P) => void,
): Promise<P> {
  const seen = new Set<string>();
  let page = first;
  onPage(page);
  while (page.next_cursor) {
    if (seen.has(page.next_cursor)) throw new PagingError("the server's pagination does not advance (repeated cursor)");
    seen.add(page.next_cursor);
    page = await fetchPage(page.next_cursor);
    onPage(page);
  }
  return page;
}

/**
 * "First page" / "Next page" under a keyset-paged list. The cursor lives in the URL (the page
 * passes its setter), so every page of a list is bookmarkable and Back returns to the previous one.
 */
export function Pager({
  cursor,
  nextCursor,
  onCursor,
}: {
  /** The cursor of the page shown; undefined on the first page. */
  cursor: string | undefined;
  /** The cursor of the next page; null/undefined at the end. */
  nextCursor: string | null | undefined;
  onCursor: (cursor: string | undefined) => void;
}) {
  return (
    <div className="toolbar">
      {cursor ? (
        <button type="button" className="btn" onClick={() => onCursor(undefined)}>
          First page
        </button>
      ) : null}
      <button type="button" className="btn" disabled={!nextCursor} onClick={() => onCursor(nextCursor ?? undefined)}>
        Next page
      </button>
    </div>
  );
}

import { type ReactNode, useLayoutEffect, useRef } from "react";
import { Pager } from "../../ui/pager";
import { TableRegion } from "./table-region";

interface ItemTableProps<T> {
  /** The table's accessible name (its scroll region's). */
  label: string;
  /** Header cells; `false` for a column this viewer does not get (e.g. admins' actions). */
  columns: readonly (string | false)[];
  items: readonly T[];
  /** Shown instead of an empty table. */
  empty: ReactNode;
  /** One <tr> (with its key) per item. */
  children: (item: T) => ReactNode;
  /**
   * Extra classes of the <table>. Every ItemTable is "cards" (one card per row on a phone): cells
   * without a data-label of their own are given their column's name.
   */
  className?: string;
}

/**
 * A list as a table, one row per item, or its empty state when there is none.
 *
 *   <ItemTable label="Modules" columns={["Name", isAdmin && "Actions"]} items={shown}
 *     empty={<EmptyState title="No modules yet." />}>
 *     {(m) => <tr key={m.name}>…</tr>}
 *   </ItemTable>
 */
export function ItemTable<T>({ label, columns, items, empty, children, className }: ItemTableProps<T>) {
  const table = useRef<HTMLTableElement>(null);
  const shown = columns.filter((c): c is string => c !== false);
  // The rows are the caller's (cells may come from components), so cells are named in the DOM.
  useLayoutEffect(() => labelCells(table.current, shown));
  if (items.length === 0) return <>{empty}</>;
  const extra = (className ?? "").split(/\s+/).filter((c) => c !== "" && c !== "cards");
  return (
    <TableRegion label={label}>
      <table className={["table", "cards", ...extra].join(" ")} ref={table}>
        <thead>
          <tr>
            {columns.map((c) =>
              c === false ? null : (
                <th key={c} scope="col">
                  {c}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{items.map((item) => children(item))}</tbody>
      </table>
    </TableRegion>
  );
}

/** Sets data-label, its column's name, on every body cell that has none (see .table.cards). */
function labelCells(table: HTMLTableElement | null, columns: readonly string[]) {
  if (!table) return;
  for (const body of table.tBodies) {
    for (const row of body.rows) {
      for (const cell of row.cells) {
        const name = columns[cell.cellIndex];
        if (name !== undefined && !cell.hasAttribute("data-label")) cell.setAttribute("data-label", name);
      }
    }
  }
}

/**
 * One page of a keyset-paged list: an ItemTable, then the Pager. The Pager stays under an empty page
 * too, so "First page" leads back from a page emptied by deletes.
 */
export function PagedTable<T>({
  cursor,
  nextCursor,
  onCursor,
  ...table
}: ItemTableProps<T> & {
  cursor: string | undefined;
  nextCursor: string | null | undefined;
  onCursor: (cursor: string | undefined) => void;
}) {
  return (
    <>
      <ItemTable {...table} />
      <Pager cursor={cursor} nextCursor={nextCursor} onCursor={onCursor} />
    </>
  );
}

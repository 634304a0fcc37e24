import type { ReactNode } from "react";
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
}

/**
 * A list as a table, one row per item, or its empty state when there is none.
 *
 *   <ItemTable label="Modules" columns={["Name", isAdmin && "Actions"]} items={shown}
 *     empty={<EmptyState title="No modules yet." />}>
 *     {(m) => <tr key={m.name}>…</tr>}
 *   </ItemTable>
 */
export function ItemTable<T>({ label, columns, items, empty, children }: ItemTableProps<T>) {
  if (items.length === 0) return <>{empty}</>;
  return (
    <TableRegion label={label}>
      <table className="table">
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

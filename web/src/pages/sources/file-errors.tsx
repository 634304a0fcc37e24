import type { SourceFileError } from "../../api/sources";
import { ItemTable } from "../parts/item-table";

/** Why a tree was refused, one row per problem, at the file and line to fix in the repository. */
export function FileErrors({ errors }: { errors: readonly SourceFileError[] }) {
  return (
    <div className="file-errors">
      <ItemTable label="File errors" columns={["File", "Line", "Code", "Message"]} items={errors} empty={null}>
        {(e) => (
          <tr key={`${e.file}:${e.line}:${e.column}:${e.code}`} data-testid="file-error">
            <td className="mono">{e.file || <span className="muted">(repository)</span>}</td>
            <td className="mono">{e.line ? (e.column ? `${e.line}:${e.column}` : e.line) : "—"}</td>
            <td>
              <code>{e.code}</code>
            </td>
            <td>{e.message}</td>
          </tr>
        )}
      </ItemTable>
    </div>
  );
}

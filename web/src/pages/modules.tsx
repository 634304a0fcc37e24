/**
 * Modules (/modules?q=): every module with its description, size and last upload; a name filter kept
 * in the URL. Any operator may upload (the API allows operators as well as admins).
 */
import { Link } from "wouter";
import { useModules } from "../api/modules";
import { EmptyState, FilterField, Page, QueryStatus, Time, useListFilter } from "../ui";
import "./pages.css";
import { ItemTable } from "./parts/item-table";
import { ManagedNameCell } from "./sources/managed-by";

export default function ModulesPage() {
  const list = useModules();
  const all = list.data ?? [];
  const filter = useListFilter(
    all,
    (m, needle) => m.name.includes(needle) || m.description.toLowerCase().includes(needle),
  );
  const shown = filter.shown;

  return (
    <Page
      title="Modules"
      actions={
        <Link href="/modules/new" className="btn btn-primary">
          Upload module
        </Link>
      }
    >
      <FilterField value={filter.query} onChange={filter.setQuery} placeholder="name or description" />
      <QueryStatus query={list}>
        <ItemTable
          label="Modules"
          columns={["Name", "Description", "Resources", "Uploaded", "SHA-256"]}
          items={shown}
          empty={
            <EmptyState title={all.length === 0 ? "No modules yet." : "No module matches the filter."}>
              {all.length === 0 ? "Upload one: a YAML list of files, packages, services and commands." : null}
            </EmptyState>
          }
        >
          {(m) => (
            <tr key={m.name}>
              <ManagedNameCell item={m} href={`/modules/${encodeURIComponent(m.name)}`} />
              <td>{m.description || <span className="muted">—</span>}</td>
              <td>{m.resource_count}</td>
              <td>
                <Time value={m.uploaded_at * 1000} />
              </td>
              <td className="mono" title={m.sha256}>
                {m.sha256.slice(0, 12)}
              </td>
            </tr>
          )}
        </ItemTable>
      </QueryStatus>
    </Page>
  );
}

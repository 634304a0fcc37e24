/**
 * Git sources (/sources?q=): repositories whose modules/ and assignments/ the state service keeps
 * the catalog in step with. Everyone sees them; they are added from the CLI (`orchctl sources add`),
 * because a source's token or deploy key must never pass through a browser.
 */
import { Link } from "wouter";
import { useSources } from "../api/sources";
import { EmptyState, FilterField, Page, QueryStatus, Time, useListFilter } from "../ui";
import "./pages.css";
import { ItemTable } from "./parts/item-table";
import { CommitRef, SourceStatus } from "./sources/source-status";
import "./sources/sources.css";

export default function SourcesPage() {
  const list = useSources();
  const all = list.data ?? [];
  const filter = useListFilter(
    all,
    (s, needle) => s.name.includes(needle) || s.url.toLowerCase().includes(needle) || s.branch.includes(needle),
  );

  return (
    <Page title="Sources">
      <FilterField value={filter.query} onChange={filter.setQuery} placeholder="name, URL or branch" />
      <QueryStatus query={list}>
        <ItemTable
          label="Sources"
          columns={["Name", "URL", "Branch", "Status", "Commit", "Synced", "Error"]}
          items={filter.shown}
          empty={
            <EmptyState title={all.length === 0 ? "No git sources yet." : "No source matches the filter."}>
              {all.length === 0 ? (
                <>
                  Add one with <code>orchctl sources add</code>: its modules and assignments then come from the
                  repository.
                </>
              ) : null}
            </EmptyState>
          }
        >
          {(s) => (
            <tr key={s.name} data-testid="source-row">
              <td>
                <Link href={`/sources/${encodeURIComponent(s.name)}`}>{s.name}</Link>
              </td>
              <td className="mono source-url" title={s.url}>
                {s.url}
              </td>
              <td className="mono">{s.branch}</td>
              <td>
                <SourceStatus status={s.status} />
              </td>
              <td>
                <CommitRef commit={s.commit} />
              </td>
              <td>
                <Time value={s.synced_at} fallback="never" />
              </td>
              <td className="source-error">{s.error || <span className="muted">—</span>}</td>
            </tr>
          )}
        </ItemTable>
      </QueryStatus>
    </Page>
  );
}

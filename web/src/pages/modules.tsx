/**
 * Modules (/modules?q=): every module with its description, size and last upload; a name filter kept
 * in the URL. Any operator may upload (the API allows operators as well as admins).
 */
import { Link } from "wouter";
import { useModules } from "../api/modules";
import { useUrlState } from "../lib/url-state";
import { EmptyState, Field, Page, QueryStatus, Time } from "../ui";
import "./pages.css";
import { TableRegion } from "./parts/table-region";

export default function ModulesPage() {
  const [params, setParams] = useUrlState();
  const q = params.get("q") ?? "";
  const list = useModules();
  const all = list.data ?? [];
  const needle = q.trim().toLowerCase();
  const shown = needle
    ? all.filter((m) => m.name.includes(needle) || m.description.toLowerCase().includes(needle))
    : all;

  return (
    <Page
      title="Modules"
      actions={
        <Link href="/modules/new" className="btn btn-primary">
          Upload module
        </Link>
      }
    >
      <div className="toolbar">
        <Field label="Filter">
          <input
            type="search"
            value={q}
            placeholder="name or description"
            spellCheck={false}
            autoComplete="off"
            onChange={(e) => setParams({ q: e.target.value }, { replace: true })}
          />
        </Field>
      </div>
      <QueryStatus query={list}>
        {shown.length === 0 ? (
          <EmptyState title={all.length === 0 ? "No modules yet." : "No module matches the filter."}>
            {all.length === 0 ? "Upload one: a YAML list of files, packages, services and commands." : null}
          </EmptyState>
        ) : (
          <TableRegion label="Modules">
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Description</th>
                  <th scope="col">Resources</th>
                  <th scope="col">Uploaded</th>
                  <th scope="col">SHA-256</th>
                </tr>
              </thead>
              <tbody>
                {shown.map((m) => (
                  <tr key={m.name}>
                    <td>
                      <Link href={`/modules/${encodeURIComponent(m.name)}`}>{m.name}</Link>
                    </td>
                    <td>{m.description || <span className="muted">—</span>}</td>
                    <td>{m.resource_count}</td>
                    <td>
                      <Time value={m.uploaded_at * 1000} />
                    </td>
                    <td className="mono" title={m.sha256}>
                      {m.sha256.slice(0, 12)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableRegion>
        )}
      </QueryStatus>
    </Page>
  );
}

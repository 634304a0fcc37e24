/**
 * Value sets (/values?new=1&cursor=): the data modules read as `values`, in layers: `defaults`,
 * then the sets whose selector matches an agent by priority, then the agent's own values (its page).
 * Any operator reads them; an operator limited to some agents cannot write them (the API says why).
 */
import { useState } from "react";
import { Link } from "wouter";
import { usePutValueSet, useValueSets } from "../api/values";
import { useUrlState } from "../lib/url-state";
import { EmptyState, Page, QueryStatus, Section, Time } from "../ui";
import "./pages.css";
import { PagedTable } from "./parts/item-table";
import { DEFAULTS_SET, ValueSetForm } from "./values/value-set-form";

export default function ValuesPage() {
  const [params, setParams] = useUrlState();
  const cursor = params.get("cursor") ?? undefined;
  const creating = params.get("new") === "1";
  const list = useValueSets(cursor);
  const put = usePutValueSet();
  const [notice, setNotice] = useState<string | undefined>();
  const sets = list.data?.sets ?? [];

  return (
    <Page
      title="Values"
      actions={
        creating ? null : (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              put.reset();
              setNotice(undefined);
              setParams({ new: "1" });
            }}
          >
            New value set
          </button>
        )
      }
    >
      {creating ? (
        <Section title="New value set">
          <ValueSetForm
            submitLabel="Create"
            pending={put.isPending}
            error={put.error}
            onSubmit={(name, body) =>
              put.mutate(
                { name, body },
                {
                  onSuccess: (s) => {
                    setNotice(`Saved value set ${s.name}.`);
                    setParams({ new: undefined }, { replace: true });
                  },
                },
              )
            }
            extra={
              <button type="button" className="btn" onClick={() => setParams({ new: undefined })}>
                Cancel
              </button>
            }
          />
        </Section>
      ) : null}
      {notice ? (
        <p role="status" className="muted">
          {notice}
        </p>
      ) : null}
      <Section title="Value sets, lowest layer first">
        <QueryStatus query={list}>
          <PagedTable
            label="Value sets"
            columns={["Name", "Applies to", "Priority", "Keys", "Updated"]}
            items={[...sets].sort(layerOrder)}
            empty={
              <EmptyState title="No value sets yet.">
                Modules (version 2) read them as {"{{ values.KEY }}"}; start with the {DEFAULTS_SET} set.
              </EmptyState>
            }
            cursor={cursor}
            nextCursor={list.data?.has_more ? (list.data.next_cursor ?? undefined) : undefined}
            onCursor={(c) => setParams({ cursor: c })}
          >
            {(s) => (
              <tr key={s.name}>
                <td>
                  <Link href={`/values/${encodeURIComponent(s.name)}`} className="mono">
                    {s.name}
                  </Link>
                  {s.description ? <div className="muted">{s.description}</div> : null}
                </td>
                <td className="mono">{s.selector ?? <span className="muted">every agent (lowest layer)</span>}</td>
                <td>{s.selector === null ? <span className="muted">—</span> : s.priority}</td>
                <td>{s.key_count}</td>
                <td>
                  <Time value={s.updated_at} />
                  <span className="muted"> by {s.updated_by_name || s.updated_by}</span>
                  {s.source ? <span className="muted"> (source {s.source})</span> : null}
                </td>
              </tr>
            )}
          </PagedTable>
        </QueryStatus>
      </Section>
    </Page>
  );
}

/** defaults first, then by priority, then by name: the order the layers merge in. */
function layerOrder(a: { name: string; selector: string | null; priority: number }, b: typeof a): number {
  if ((a.selector === null) !== (b.selector === null)) return a.selector === null ? -1 : 1;
  return a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}
